// The math plane seen from the CLI alone (steps.csv, summary.json), without a workload:
// agg_error against the exact reduction, compress_error of each rank's own vector, rank_spread
// between ranks; and, over many seeds, random-k and QSGD unbiased and QSGD within its variance
// bound (Alistarh et al. 2017, Lemma 3.1).
#include <fmt/format.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "support/cli.hpp"

using namespace aggsim::test;
namespace fs = std::filesystem;

namespace {

using Row = std::map<std::string, std::string>;

struct Run {
  std::vector<Row> steps;
  nlohmann::json summary;
};

// Runs `yaml` with `overrides` through the CLI and reads steps.csv and summary.json.
Run run_cli(const std::string& yaml, const std::vector<std::string>& overrides = {}) {
  const auto dir = fresh_dir("math-columns");
  write_file(dir / "s.yaml", yaml);
  std::vector<std::string> args = {"run", "s.yaml", "--out", "run", "-q"};
  for (const auto& o : overrides) args.insert(args.end(), {"--set", o});
  const auto r = run_aggsim(args, dir);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  Run out;
  std::istringstream in(read_file(dir / "run" / "steps.csv"));
  std::vector<std::string> header;
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> cells;
    std::stringstream ss(line);
    for (std::string c; std::getline(ss, c, ',');) cells.push_back(c);
    if (!line.empty() && line.back() == ',') cells.emplace_back();
    if (header.empty()) {
      header = cells;
      continue;
    }
    REQUIRE(cells.size() == header.size());
    Row row;
    for (std::size_t i = 0; i < cells.size(); ++i) row[header[i]] = cells[i];
    out.steps.push_back(row);
  }
  out.summary = nlohmann::json::parse(read_file(dir / "run" / "summary.json"));
  fs::remove_all(dir);
  return out;
}

std::string scenario(int ranks, int dim, const std::string& algorithm, const std::string& compression,
                     int steps = 1, const std::string& math = "on") {
  return fmt::format(R"(seed: 1
ranks: {ranks}
steps: {steps}
platform: {{topology: cluster, hosts: {ranks}}}
network: alpha_beta
model: {{size: {bytes}B, proxy_dim: {dim}, math: {math}}}
algorithm: {alg}
compression: {comp}
)",
                     fmt::arg("ranks", ranks), fmt::arg("steps", steps), fmt::arg("bytes", 4 * dim),
                     fmt::arg("dim", dim), fmt::arg("math", math), fmt::arg("alg", algorithm),
                     fmt::arg("comp", compression));
}

double cell(const Row& row, const std::string& key) {
  INFO(key);
  REQUIRE_FALSE(row.at(key).empty());
  return std::stod(row.at(key));
}

struct Sample {
  double mean = 0, sd = 0;
  std::size_t n = 0;
};

Sample sample(const std::vector<double>& xs) {
  Sample s;
  s.n = xs.size();
  for (double x : xs) s.mean += x;
  s.mean /= static_cast<double>(s.n);
  for (double x : xs) s.sd += (x - s.mean) * (x - s.mean);
  s.sd = std::sqrt(s.sd / static_cast<double>(s.n - 1));
  return s;
}

// One single-step run per seed: the per-seed (agg_signed_error, compress_error) of step 0.
std::vector<std::pair<double, double>> over_seeds(const std::string& yaml, int seeds) {
  std::vector<std::pair<double, double>> out;
  for (int seed = 1; seed <= seeds; ++seed) {
    const Run r = run_cli(yaml, {"seed=" + std::to_string(seed)});
    REQUIRE(r.steps.size() == 1);
    out.emplace_back(cell(r.steps[0], "agg_signed_error"), cell(r.steps[0], "compress_error"));
  }
  return out;
}

}  // namespace

TEST_CASE("an all-reduce matches the exact reduction for every op, all ranks agree, nothing compressed",
          "[math_columns]") {
  for (const std::string op : {"avg", "sum", "max", "min", "custom_avg, denominator: 2.5"}) {
    INFO(op);
    const Run r = run_cli(scenario(8, 1000, "{name: ring_allreduce, op: " + op + "}", "{name: none}", 3));
    REQUIRE(r.steps.size() == 3);
    for (const Row& row : r.steps) {
      // Float summation in the ring's order against a double-precision reduction: ~1e-7.
      CHECK(cell(row, "agg_error") < 1e-6);
      CHECK(cell(row, "rank_spread") == 0.0);  // every rank holds the same bits
      CHECK(cell(row, "compress_error") == 0.0);
      if (op == "max" || op == "min") CHECK(cell(row, "agg_error") == 0.0);  // exact in float too
    }
    CHECK(r.summary["agg_error"].get<double>() < 1e-6);
    CHECK(r.summary["rank_spread"].get<double>() == 0.0);
    CHECK(r.summary["compress_error"].get<double>() == 0.0);
  }
}

TEST_CASE("gossip keeps the mean but leaves the ranks apart, a k-of-n server reduces something else",
          "[math_columns]") {
  const Run gossip =
      run_cli(scenario(8, 1000, "{name: gossipgrad, group_size: 1, op: avg}", "{name: none}", 3));
  for (const Row& row : gossip.steps) {
    CHECK(cell(row, "agg_error") < 1e-6);  // pairwise averaging preserves the mean
    // Each rank averages two of 8 independent standard normal vectors: ||x_r - mean|| / ||mean||
    // is about sqrt(1/2 - 1/8) / sqrt(1/8) = 1.7 in the first step.
    CHECK(cell(row, "rank_spread") > 0.5);
  }
  // The first 4 of 8 pushes: the mean of 4 vectors against the mean of 8 (relative error ~1).
  const Run k_of_n = run_cli(scenario(8, 1000, "{name: parameter_server, aggregate: 4}", "{name: none}", 2));
  for (const Row& row : k_of_n.steps) CHECK(cell(row, "agg_error") > 0.5);
  // Dedicated servers hold no gradient: the exact mean is the workers', and they agree on it.
  const Run dedicated = run_cli(
      scenario(6, 1000, "{name: parameter_server, servers: 2, placement: dedicated}", "{name: none}", 2));
  for (const Row& row : dedicated.steps) {
    CHECK(cell(row, "agg_error") < 1e-6);
    CHECK(cell(row, "rank_spread") == 0.0);
  }
}

TEST_CASE("with math off the math columns are empty and their summary means null", "[math_columns]") {
  const Run r = run_cli(scenario(4, 64, "{name: ring_allreduce}", "{name: none}", 2, "off"));
  for (const Row& row : r.steps)
    for (const char* key : {"agg_error", "agg_signed_error", "compress_error", "rank_spread"}) {
      INFO(key);
      CHECK(row.at(key).empty());
      CHECK(r.summary[key].is_null());
    }
}

// Unbiasedness from the CLI alone: agg_signed_error = <a - e, e> / ||e||^2 has mean 0 over seeds
// for an unbiased scheme (E[a] = e), so its mean over N seeds stays within a few standard errors
// sd / sqrt(N) of 0, while a biased compressor (top-k keeps the largest values: a shrinks toward
// e's largest entries, <a - e, e> = -||e - a||^2 < 0 with one rank) sits many standard errors
// below. QSGD's variance: compress_error is the mean over ranks of ||Q(v) - v|| / ||v||, so by
// Jensen E[compress_error^2] <= E[||Q(v) - v||^2 / ||v||^2] <= min(n/s^2, sqrt(n)/s) (Lemma 3.1).
// Random-k's variance is exactly omega = d/k - 1 per rank.
TEST_CASE("random-k and QSGD are unbiased over seeds and QSGD stays within its variance bound",
          "[math_columns][statistics]") {
  const int seeds = 40, n = 256, ranks = 4;
  auto yaml = [&](const std::string& compression) {
    return scenario(ranks, n, "{name: allgather}", compression);
  };
  auto z_of = [](const std::vector<std::pair<double, double>>& runs) {
    std::vector<double> signed_errors;
    for (const auto& r : runs) signed_errors.push_back(r.first);
    const Sample s = sample(signed_errors);
    REQUIRE(s.sd > 0);
    return s.mean / (s.sd / std::sqrt(static_cast<double>(s.n)));
  };
  auto mean_square = [](const std::vector<std::pair<double, double>>& runs) {
    double total = 0;
    for (const auto& r : runs) total += r.second * r.second;
    return total / static_cast<double>(runs.size());
  };

  const auto randomk = over_seeds(yaml("{name: randomk, k: 32}"), seeds);
  CHECK(std::abs(z_of(randomk)) < 4);
  // k = 32 of 256: omega = 256/32 - 1 = 7; the ranks' errors concentrate, so the square of their
  // mean is a little below it.
  const double omega = 256.0 / 32.0 - 1.0;
  CHECK(mean_square(randomk) <= omega * 1.02);
  CHECK(mean_square(randomk) >= omega * 0.85);

  for (int s : {1, 4}) {
    INFO("QSGD levels " << s);
    const auto qsgd = over_seeds(yaml(fmt::format("{{name: qsgd, levels: {}}}", s)), seeds);
    CHECK(std::abs(z_of(qsgd)) < 4);
    const double bound = std::min(n / double(s * s), std::sqrt(double(n)) / s);
    CHECK(mean_square(qsgd) <= bound);
    // Not vacuous: for Gaussian v it is about sqrt(2n/pi) - 1 = 11.8 of 16 at s = 1, 2.2 of 4 at s = 4.
    CHECK(mean_square(qsgd) > 0.3 * bound);
  }

  // The same check refuses a biased compressor.
  const auto topk = over_seeds(yaml("{name: topk, k: 32}"), seeds);
  CHECK(z_of(topk) < -10);
}
