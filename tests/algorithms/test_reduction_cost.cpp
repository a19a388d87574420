// compute.reduce_speed: every reduction of received data costs its bytes / reduce_speed on the
// reducing rank's host. Step times against the alpha-beta-gamma closed forms (Thakur, Rabenseifner
// & Gropp 2005, gamma = 1 / reduce_speed seconds per byte) on the formula cluster (alpha = 2 us,
// beta = 1.25e9 B/s); reduce_speed: 0 gives the alpha-beta times exactly; the charge is the same
// with the math plane on and off; bad values are refused by run and validate alike.
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <filesystem>

#include "alpha_beta.hpp"
#include "support/cli.hpp"
#include "support/reduction_check.hpp"

using namespace aggsim;
using namespace aggsim::test;

namespace {

// 1 GB/s: reducing 1.5 MB takes 1.5 ms, more than sending it (1.2 ms).
constexpr double kGamma = 1e-9;

// The formula cluster of alpha_beta.hpp; `compute` is the compute section's inside, or empty.
std::string scenario(const std::string& algorithm, int p, double bytes, const std::string& reduce_speed) {
  std::string yaml = fmt::format(R"(
seed: 11
ranks: {p}
steps: 2
platform: {{topology: cluster, hosts: {p}, bandwidth: 10Gbps, latency: 1us, speed: 100Gf}}
network: alpha_beta
model: {{size: {bytes}B, proxy_dim: 16}}
algorithm: {{op: avg, {alg}}}
)",
                                 fmt::arg("p", p), fmt::arg("bytes", bytes), fmt::arg("alg", algorithm));
  if (!reduce_speed.empty()) yaml += fmt::format("compute: {{reduce_speed: {}}}\n", reduce_speed);
  return yaml;
}

void check_times(const std::string& algorithm, int p, double bytes, const std::string& reduce_speed,
                 double expected) {
  for (const std::string math : {"on", "off"}) {
    INFO(algorithm << ", p " << p << ", S " << bytes << ", reduce_speed " << reduce_speed << ", math " << math
                   << ", expected " << expected);
    const auto times = step_times(scenario(algorithm, p, bytes, reduce_speed), {"model.math=" + math});
    REQUIRE(times.size() == 2);
    for (double t : times) CHECK(t == Approx(expected).epsilon(1e-9));
  }
}

}  // namespace

// Reduce-scatter: p-1 steps, each receives S/p and reduces it before the next: (p-1)/p S gamma.
TEST_CASE("ring all-reduce with reduction cost equals 2(p-1)alpha + 2(p-1)/p S beta + (p-1)/p S gamma",
          "[reduce_speed][formula]") {
  for (int p : {2, 3, 5, 8})
    for (double S : {kSmall, kLarge / 8}) {
      check_times("name: ring_allreduce", p, S, "1GBps", ring_cost(p, S) + (p - 1.0) / p * S * kGamma);
      check_times("name: ring_allreduce", p, S, "0", ring_cost(p, S));
    }
}

// Recursive halving on p = 2^k: step j reduces the S/2^(j+1) received: (p-1)/p S gamma in all.
TEST_CASE("halving-doubling with reduction cost adds (p-1)/p S gamma", "[reduce_speed][formula]") {
  for (int p : {2, 4, 8}) {
    check_times("name: halving_doubling_allreduce", p, kSmall, "1GBps",
                halving_doubling_cost(p, kSmall) + (p - 1.0) / p * kSmall * kGamma);
    check_times("name: halving_doubling_allreduce", p, kSmall, "0", halving_doubling_cost(p, kSmall));
  }
}

// Binomial reduce: the root receives from its L children one after the other and reduces each
// (S gamma) before taking the next; the child at mask 2^j is ready exactly when the root asks
// for it, so each level costs alpha + S/beta + S gamma. The broadcast reduces nothing.
TEST_CASE("binomial tree all-reduce with reduction cost adds ceil(log2 p) S gamma",
          "[reduce_speed][formula]") {
  for (int p : {2, 3, 5, 8}) {
    check_times("name: tree_allreduce, chunks: 1", p, kSmall, "1GBps",
                tree_cost(p, kSmall, 1) + ceil_log2(p) * kSmall * kGamma);
    check_times("name: tree_allreduce, chunks: 1", p, kSmall, "0", tree_cost(p, kSmall, 1));
  }
}

// One dedicated server, W workers: W pushes share its down link, it adds the W shards into its
// accumulator (W S gamma), then W pulls share its up link.
TEST_CASE("parameter server with reduction cost: the server adds W S gamma", "[reduce_speed][formula]") {
  for (int workers : {1, 3, 6}) {
    const int p = workers + 1;
    const double S = 1e6, comm = 2 * (kAlpha + workers * S / kBeta);
    check_times("name: parameter_server, placement: dedicated", p, S, "1GBps", comm + workers * S * kGamma);
    check_times("name: parameter_server, placement: dedicated", p, S, "0", comm);
  }
  // Colocated: every rank is a worker; the server's own shard is added too (p S gamma).
  for (int p : {2, 5}) {
    const double S = 1e6;
    check_times("name: parameter_server", p, S, "1GBps", 2 * (kAlpha + (p - 1) * S / kBeta) + p * S * kGamma);
  }
}

// Absent, reduce_speed is the host's: one flop per fp32 element, 4 bytes per flop of the cluster's
// 100 Gf hosts: gamma = 1 / 4e11 s/B.
TEST_CASE("reduce_speed defaults to 4 bytes per host flop", "[reduce_speed][formula]") {
  const int p = 4;
  const double gamma = 1.0 / (4 * 100e9);
  for (const std::string math : {"on", "off"}) {
    const auto times = step_times(scenario("name: ring_allreduce", p, kSmall, ""), {"model.math=" + math});
    for (double t : times) CHECK(t == Approx(ring_cost(p, kSmall) + 0.75 * kSmall * gamma).epsilon(1e-9));
    CHECK(times.at(0) > ring_cost(p, kSmall) * (1 + 1e-6));
  }
  // An explicit rate in bits per second reads as SimGrid reads bandwidths: 8 Gbps = 1 GB/s.
  check_times("name: ring_allreduce", p, kSmall, "8Gbps", ring_cost(p, kSmall) + 0.75 * kSmall * kGamma);
}

TEST_CASE("reduce_speed appears in resolved.yaml", "[reduce_speed][input]") {
  for (const auto& [given, shown] : std::vector<std::pair<std::string, std::string>>{
           {"", "reduce_speed: host"}, {"1GBps", "reduce_speed: 1000000000Bps"}, {"0", "reduce_speed: 0"}}) {
    INFO("given '" << given << "'");
    const auto dir = fresh_dir("reduce-speed");
    write_file(dir / "s.yaml", scenario("name: ring_allreduce", 2, 1e6, given));
    const auto r = run_aggsim({"run", "s.yaml", "--out", "out"}, dir);
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    const std::string resolved = read_file(dir / "out" / "resolved.yaml");
    CHECK(resolved.find(shown) != std::string::npos);
    // The resolved file runs to the same times.
    const auto again = run_aggsim({"run", "out/resolved.yaml", "--out", "again"}, dir);
    CHECK(again.exit_code == 0);
    CHECK(read_file(dir / "again" / "steps.csv") == read_file(dir / "out" / "steps.csv"));
    std::filesystem::remove_all(dir);
  }
}

TEST_CASE("bad reduce_speed values are refused with file, line and key", "[reduce_speed][input]") {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"fast", "s.yaml:9:25: compute.reduce_speed: must be host, 0 (free) or a rate"},
      {"-1GBps", "s.yaml:9:25: compute.reduce_speed: must be host, 0 (free) or a rate"},
      {"[1GBps]", "s.yaml:9:25: compute.reduce_speed:"},
      {"10GB", "s.yaml:9:25: compute.reduce_speed: must be host, 0 (free) or a rate"},
  };
  for (const auto& [value, expected] : cases)
    for (const std::string verb : {"run", "validate"}) {
      INFO(value << " (" << verb << ")");
      const auto dir = fresh_dir("reduce-speed-bad");
      write_file(dir / "s.yaml", scenario("name: ring_allreduce", 2, 1e6, value));
      std::vector<std::string> args = {verb, "s.yaml"};
      if (verb == "run") args.insert(args.end(), {"--out", "out"});
      const auto r = run_aggsim(args, dir);
      INFO("stderr: " << r.err);
      CHECK(r.exit_code == 2);
      CHECK(r.err.find(expected) != std::string::npos);
      CHECK(!std::filesystem::exists(dir / "out"));
      std::filesystem::remove_all(dir);
    }
}
