// Compressed aggregation end to end: all-gather of top-k payloads on 16 ranks against a direct
// computation and the alpha-beta closed form; summable compressors and PowerSGD on the ring
// all-reduce; the load-time rejection of a non-summable compressor on a reducing collective.
#include <fmt/format.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <map>
#include <numeric>

#include "compressor_fixture.hpp"
#include "support/algorithm_keys.hpp"
#include "support/cli.hpp"
#include "support/reduction_check.hpp"
#include "support/simulate_capturing.hpp"

using namespace aggsim;
using namespace aggsim::test;

namespace {

// Cluster links: 10 Gb/s = 1.25e9 B/s and 1 us each; a transfer crosses two links: alpha = 2 us.
constexpr double kAlpha = 2e-6, kBeta = 1.25e9, kSpeed = 100e9;

std::string scenario(int p, const std::string& algorithm, const std::string& compression, int proxy_dim,
                     const std::string& size) {
  return compression_scenario(p, fmt::format("size: {}, proxy_dim: {}", size, proxy_dim),
                              fmt::format("name: {}, op: avg", algorithm), compression);
}

// The k largest magnitudes of v, by a full sort (independent of the compressor's selection).
Eigen::VectorXd top_k_by_sort(const Eigen::VectorXf& v, int k) {
  std::vector<int> order(static_cast<std::size_t>(v.size()));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return std::abs(v[a]) > std::abs(v[b]); });
  Eigen::VectorXd out = Eigen::VectorXd::Zero(v.size());
  for (int i = 0; i < k; ++i) out[order[static_cast<std::size_t>(i)]] = v[order[static_cast<std::size_t>(i)]];
  return out;
}

struct RunNumbers {
  std::vector<double> step_time;
  std::vector<std::uint64_t> step_bytes;
  double max_error = 0, max_spread = 0;  // vs the direct top-k average; between ranks
};

RunNumbers run_topk_allgather(const std::string& yaml, int k) {
  const std::string text = run_isolated([&] {
    const Scenario sc = load_scenario_text(yaml, "test.yaml");
    Captured run = simulate_capturing(sc);
    const auto& [before, after, result] = run;
    double error = 0, spread = 0;
    for (const auto& [step, inputs] : before) {
      Eigen::VectorXd expected = Eigen::VectorXd::Zero(inputs[0].size());
      for (const auto& in : inputs) expected += top_k_by_sort(in, k);
      expected /= sc.ranks;
      for (const auto& out : after.at(step)) {
        error = std::max(error, (out.cast<double>() - expected).cwiseAbs().maxCoeff());
        spread = std::max(spread, static_cast<double>((out - after.at(step)[0]).cwiseAbs().maxCoeff()));
      }
    }
    std::string out = fmt::format("{} {}", error, spread);
    for (const auto& s : summarize_steps(result.log))
      out += fmt::format(" {} {}", s.step_time_s, s.bytes_sent);
    return out;
  });
  std::istringstream in(text);
  RunNumbers r;
  if (!(in >> r.max_error >> r.max_spread)) throw std::runtime_error("run failed: " + text);
  double t;
  std::uint64_t b;
  while (in >> t >> b) {
    r.step_time.push_back(t);
    r.step_bytes.push_back(b);
  }
  return r;
}

}  // namespace

TEST_CASE("top-k + all-gather on 16 ranks: direct aggregate, closed-form time, encoded bytes",
          "[compression][allgather]") {
  const int p = 16, dim = 4000, k = 200;  // ratio 0.05; proxy and model coincide (16000 B = 4000 floats)
  const RunNumbers r =
      run_topk_allgather(scenario(p, "allgather", "name: topk, ratio: 0.05", dim, "16000B"), k);
  CHECK(r.max_error <= 1e-6);
  CHECK(r.max_spread == 0.0);  // every rank reduces the same payloads in the same order

  const auto c = make_compressor("topk", {{"ratio", "0.05"}});
  const std::uint64_t encoded = k * 8;  // uint32 index + fp32 value per kept entry
  REQUIRE(c->encoded_bytes(std::uint64_t{dim}) == encoded);
  // Encode once, p-1 ring steps of one payload each, decode all p payloads.
  const double compute = (c->encode_flops(dim) + p * c->decode_flops(dim)) / kSpeed;
  const double expected = compute + (p - 1) * (kAlpha + encoded / kBeta);
  REQUIRE(r.step_time.size() == 2);
  for (std::size_t s = 0; s < r.step_time.size(); ++s) {
    CHECK(r.step_time[s] == Approx(expected).epsilon(1e-9));
    CHECK(r.step_bytes[s] == std::uint64_t(p) * (p - 1) * encoded);  // each payload crosses p-1 links
  }
}

TEST_CASE("all-gather time follows the encoded size of the modeled gradient, not the proxy",
          "[compression][allgather]") {
  const int p = 4;
  const std::uint64_t wire = 250000;  // 1 MB modeled, 1000 proxy values
  const RunNumbers r =
      run_topk_allgather(scenario(p, "allgather", "name: topk, ratio: 0.01", 1000, "1000000B"), 10);
  const auto c = make_compressor("topk", {{"ratio", "0.01"}});
  const double encoded = 2500 * 8;
  const double expected =
      (c->encode_flops(wire) + p * c->decode_flops(wire)) / kSpeed + (p - 1) * (kAlpha + encoded / kBeta);
  CHECK(r.max_error <= 1e-6);
  for (double t : r.step_time) CHECK(t == Approx(expected).epsilon(1e-9));
}

TEST_CASE("summable compressors and PowerSGD ride the ring all-reduce", "[compression][reducing]") {
  SECTION("shared-seed random-k keeping everything gives the exact average") {
    const auto e = check_reduction(
        scenario(8, "ring_allreduce", "name: randomk, ratio: 1, shared_seed: true", 301, "1MB"));
    CHECK(e.checked_vectors == 16);
    CHECK(e.max_abs_error <= summation_tolerance(8, e.reference_scale));
    CHECK(e.max_rank_spread == 0.0);
  }
  SECTION(
      "PowerSGD with rank >= the proxy matrix's side gives the exact average through P and Q all-reduces") {
    const auto e = check_reduction(scenario(8, "ring_allreduce", "name: powersgd, rank: 4", 16, "1MB"));
    CHECK(e.checked_vectors == 16);
    CHECK(e.max_abs_error <= 1e-4 * std::max(1.0, e.reference_scale));
    CHECK(e.max_rank_spread == 0.0);
  }
  SECTION("shared-seed random-k moves 4k bytes per rank through the ring: 2(p-1)(alpha + 4k/p/beta)") {
    const int p = 8;
    const auto times =
        step_times(scenario(p, "ring_allreduce", "name: randomk, k: 64000, shared_seed: true", 100, "1MB"));
    const auto c = make_compressor("randomk", {{"k", "64000"}, {"shared_seed", "true"}});
    const double flops = c->encode_flops(250000) + c->decode_flops(250000);
    const double expected = flops / kSpeed + 2.0 * (p - 1) * (kAlpha + 64000.0 * 4 / p / kBeta);
    for (double t : times) CHECK(t == Approx(expected).epsilon(1e-9));
  }
}

TEST_CASE("every reducing collective carries summable payloads and PowerSGD's factors",
          "[compression][reducing]") {
  for (const auto& algorithm : algorithm_table()) {
    if (!algorithm.reduces_in_flight || algorithm.compresses_itself) continue;
    INFO(algorithm.name);
    const std::string name = algorithm.name + required_algorithm_keys(algorithm.name, 8);
    const auto shared =
        check_reduction(scenario(8, name, "name: randomk, ratio: 1, shared_seed: true", 301, "1MB"));
    CHECK(shared.checked_vectors == 16);
    CHECK(shared.max_abs_error <= summation_tolerance(8, shared.reference_scale));
    const auto power = check_reduction(scenario(8, name, "name: powersgd, rank: 4", 16, "1MB"));
    CHECK(power.checked_vectors == 16);
    CHECK(power.max_abs_error <= 1e-4 * std::max(1.0, power.reference_scale));
  }
}

TEST_CASE("a non-summable compressor on a reducing collective is rejected, naming allgather",
          "[compression][cli]") {
  const auto dir = fresh_dir("topk-ring");
  write_file(dir / "s.yaml", scenario(4, "ring_allreduce", "name: topk, ratio: 0.01", 100, "1MB"));
  const CliResult r = run_aggsim({"validate", (dir / "s.yaml").string()});
  CHECK(r.exit_code != 0);
  CHECK_THAT(r.err,
             Catch::Contains("topk") && Catch::Contains("allgather") && Catch::Contains("ring_allreduce"));
  std::filesystem::remove_all(dir);
}

namespace {

// Shared-seed random-k with ratio 1/2 on a transport: every rank keeps the same half of the
// coordinates, so the average has exactly n/2 nonzeros, each 2 x the mean of the ranks' values
// there (the n/k unbiasing scale), and zeros elsewhere. A receiver decoding with the wrong index
// seed puts values at the wrong coordinates and fails the second check. Returns the worst error,
// the largest support seen, and the spread between ranks.
struct SharedRandomK {
  double max_error = 0, max_spread = 0;
  long min_support = 0, max_support = 0;
};

SharedRandomK run_shared_randomk(const std::string& yaml) {
  const std::string text = run_isolated([&] {
    const Scenario sc = load_scenario_text(yaml, "test.yaml");
    Captured run = simulate_capturing(sc);
    const auto& [before, after, result] = run;
    double error = 0, spread = 0;
    long lo = -1, hi = 0;
    for (const auto& [step, inputs] : before) {
      const Eigen::VectorXf& out = after.at(step)[0];
      const long support = static_cast<long>((out.array() != 0.0f).count());
      lo = lo < 0 ? support : std::min(lo, support);
      hi = std::max(hi, support);
      for (Eigen::Index i = 0; i < out.size(); ++i) {
        if (out[i] == 0.0f) continue;
        double mean = 0;
        for (const auto& in : inputs) mean += in[i];
        mean /= static_cast<double>(inputs.size());
        error = std::max(error, std::abs(out[i] - 2.0 * mean));
      }
      for (const auto& other : after.at(step))
        spread = std::max(spread, static_cast<double>((other - out).cwiseAbs().maxCoeff()));
    }
    return fmt::format("{} {} {} {}", error, spread, lo, hi);
  });
  std::istringstream in(text);
  SharedRandomK r;
  if (!(in >> r.max_error >> r.max_spread >> r.min_support >> r.max_support))
    throw std::runtime_error("run failed: " + text);
  return r;
}

}  // namespace

TEST_CASE("shared-seed random-k keeps one index set on every transport (ratio 1/2)",
          "[compression][randomk]") {
  const int p = 6, dim = 1000;
  std::vector<std::string> algorithms = {"allgather", "parameter_server, servers: 1",
                                         "parameter_server, servers: 2"};
  for (const auto& algorithm : algorithm_table())
    if (algorithm.reduces_in_flight && !algorithm.compresses_itself)
      algorithms.push_back(algorithm.name + required_algorithm_keys(algorithm.name, p));
  for (const auto& algorithm : algorithms) {
    INFO(algorithm);
    const auto r = run_shared_randomk(
        scenario(p, algorithm, "name: randomk, ratio: 0.5, shared_seed: true", dim, "1MB"));
    CHECK(r.min_support == dim / 2);
    CHECK(r.max_support == dim / 2);
    CHECK(r.max_error <= summation_tolerance(p, 8.0));
    CHECK(r.max_spread == 0.0);
  }
}

TEST_CASE("PowerSGD on a reducing collective with op min or max is rejected at validation",
          "[compression][cli]") {
  const auto dir = fresh_dir("powersgd-max");
  for (const std::string op : {"min", "max"}) {
    std::string text = scenario(4, "ring_allreduce", "name: powersgd, rank: 2", 64, "1MB");
    text.replace(text.find("op: avg"), 7, "op: " + op);
    write_file(dir / "s.yaml", text);
    const CliResult r = run_aggsim({"validate", (dir / "s.yaml").string()});
    INFO(r.err);
    CHECK(r.exit_code != 0);
    CHECK_THAT(r.err, Catch::Contains("s.yaml:") && Catch::Contains("powersgd") &&
                          Catch::Contains("op sum, avg or custom_avg") && Catch::Contains("got " + op));
  }
  std::filesystem::remove_all(dir);
}
