// Compute model timing under alpha_beta: the overlapped backward/communication pipeline of
// bucketed by-layer aggregation, by-model aggregation, synchronous stragglers, and the compute
// time steps.csv reports.
#include <fmt/ranges.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <vector>

#include "sim/workload/compute_model.hpp"
#include "support/reduction_check.hpp"
#include "workload_support.hpp"

using namespace aggsim;
using namespace aggsim::test;

namespace {

constexpr int kRanks = 4;
constexpr double kSpeed = 1e9;  // 1Gf hosts

// `compute` is a `compute: {...}` line or empty. Reductions are free (reduce_speed: 0), so the
// closed forms are the alpha-beta ones.
std::string layered(const std::string& table, const std::string& algorithm_extra,
                    const std::string& compute = "") {
  const std::string prefix = "compute: {";
  const std::string section = compute.empty() ? "compute: {reduce_speed: 0}"
                                              : prefix + "reduce_speed: 0, " + compute.substr(prefix.size());
  return cluster_scenario(
      kRanks, 3,
      fmt::format("model: {{layers: {}, batch: 2}}\nalgorithm: {{name: ring_allreduce{}}}\n{}", table,
                  algorithm_extra, section));
}

}  // namespace

TEST_CASE("bucketed by-layer aggregation overlaps the backward pass as a two-stage pipeline",
          "[timing][overlap]") {
  // L layers of n parameters, one bucket each (bucket = layer bytes). Forward F, backward b per
  // layer, communication c per bucket: bucket k is ready at F + k b and its all-reduce starts when
  // both it and the previous bucket's are done, so the step ends at
  //   F + b + c + (L - 1) max(b, c).
  const int L = 6, rows = 500, cols = 400;  // n = 200,000 parameters = 800 kB per layer
  const double n = rows * cols, batch = 2;
  for (double f : {2e4, 4e6}) {  // communication-bound, then compute-bound
    INFO("forward flops per layer and sample " << f);
    const std::string table = write_layer_table(L, rows, cols, f);
    const double F = L * f * batch / kSpeed, b = 2 * f * batch / kSpeed, c = ring_cost(kRanks, 4 * n);
    const auto times = step_times(layered(table, fmt::format(", granularity: layer, bucket: {}B", 4 * n)));
    const double expected = F + b + c + (L - 1) * std::max(b, c);
    for (double t : times) CHECK(t == Approx(expected).epsilon(1e-9));

    // By model: the whole gradient after the whole backward pass, one all-reduce of L n values.
    const auto flat = step_times(layered(table, ", granularity: model"));
    for (double t : flat) CHECK(t == Approx(F + L * b + ring_cost(kRanks, 4 * n * L)).epsilon(1e-9));
  }
}

TEST_CASE("DDP buckets group consecutive layers up to the bucket size", "[timing][overlap]") {
  // Buckets of 2.5 layers' bytes close after 3 layers (a bucket closes once it reaches the size):
  // 6 layers make 2 buckets of 3, each ready after 3 layers' backward.
  const int L = 6, rows = 500, cols = 400;
  const double n = rows * cols, batch = 2, f = 4e6;
  const std::string table = write_layer_table(L, rows, cols, f);
  const double F = L * f * batch / kSpeed, b3 = 3 * 2 * f * batch / kSpeed, c3 = ring_cost(kRanks, 4 * 3 * n);
  const auto times = step_times(layered(table, fmt::format(", granularity: layer, bucket: {}B", 10 * n)));
  for (double t : times) CHECK(t == Approx(F + b3 + c3 + std::max(b3, c3)).epsilon(1e-9));
}

TEST_CASE("one slow rank delays a synchronous all-reduce by its extra compute time", "[timing][stragglers]") {
  // Ring all-reduce cannot finish before its slowest member starts: the step is the slow rank's
  // compute C / factor plus the all-reduce.
  const int L = 4, rows = 500, cols = 400;
  const double n = rows * cols, batch = 2, f = 1e6;
  const std::string table = write_layer_table(L, rows, cols, f);
  const double C = 3 * L * f * batch / kSpeed, comm = ring_cost(kRanks, 4 * n * L);
  for (double factor : {1.0, 0.5, 0.2}) {
    INFO("speed factor " << factor);
    const std::string rule =
        fmt::format("compute: {{speed_factors: {{slow_ranks: [2], factor: {}}}}}", factor);
    for (double t : step_times(layered(table, ", granularity: model", rule)))
      CHECK(t == Approx(C / factor + comm).epsilon(1e-9));
    const std::string list = fmt::format("compute: {{speed_factors: [1, 1, 1, {}]}}", factor);
    for (double t : step_times(layered(table, ", granularity: model", list)))
      CHECK(t == Approx(C / factor + comm).epsilon(1e-9));
  }
}

TEST_CASE("straggler noise only ever delays a synchronous step and is reproducible", "[timing][stragglers]") {
  const std::string table = write_layer_table(2, 100, 100, 1e6);
  const std::string noisy = "compute: {straggler: {distribution: exponential, mean: 0.5}}";
  const auto base = step_times(layered(table, ""));
  const auto a = step_times(layered(table, "", noisy));
  const auto b = step_times(layered(table, "", noisy));
  REQUIRE(a.size() == base.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    CHECK(a[i] == b[i]);
    CHECK(a[i] > base[i]);
  }
}

TEST_CASE("compute_time_s in steps.csv is the slowest rank's forward and backward time",
          "[timing][outputs]") {
  // Per rank and step: (forward + backward FLOPs per sample) x model.batch / (host speed x speed
  // factor) x straggler noise, the backward pass twice the forward (no backward_flops in the table).
  // steps.csv reports the slowest rank's.
  const int L = 3, steps = 3;
  const double f = 5e6, batch = 4, speed = 2e9;
  const std::vector<double> factors = {1, 0.5, 1, 0.8};
  const std::string table = write_layer_table(L, 200, 100, f);
  const double per_rank = (L * f + 2 * L * f) * batch / speed;
  const auto dir = fresh_dir("compute_time");
  // Runs the scenario with `compute: {speed_factors: factors<straggler>}` and `rest`, and returns
  // steps.csv's compute_time_s column.
  const auto run = [&](const std::string& name, const std::string& straggler, const std::string& rest) {
    const auto file = dir / (name + ".yaml");
    write_file(file, cluster_scenario(kRanks, steps,
                                      fmt::format("model: {{layers: {}, batch: {}}}\n"
                                                  "compute: {{reduce_speed: 0, speed_factors: [{}]{}}}\n{}",
                                                  table, batch, fmt::join(factors, ", "), straggler, rest),
                                      "2Gf"));
    // --force: several variants of one scenario name share its folder.
    const auto r = run_aggsim({"run", file.string(), "--out", (dir / name).string(), "-q", "--force"});
    REQUIRE(r.exit_code == 0);
    const auto rows = csv_rows(read_file(dir / name / "steps.csv"));
    REQUIRE(rows.size() == steps + 1);
    REQUIRE(rows[0][3] == "compute_time_s");
    std::vector<double> column;
    for (int s = 1; s <= steps; ++s) column.push_back(std::stod(rows[static_cast<std::size_t>(s)][3]));
    return column;
  };
  SECTION("speed factors") {
    // Rank 1 at half speed is the slowest, by model and with overlapped buckets, with or without
    // training on the math plane.
    for (const char* rest : {"algorithm: {name: ring_allreduce}",
                             "algorithm: {name: ring_allreduce, granularity: layer, bucket: 0B}",
                             "algorithm: {name: ring_allreduce}\n"
                             "workload: {problem: softmax, dim: 8, classes: 3, batch: 4}"}) {
      INFO(rest);
      for (double t : run("speed", "", rest)) CHECK(t == Approx(per_rank / 0.5).epsilon(1e-9));
    }
  }
  SECTION("straggler noise") {
    // The noise multiplies each rank's time, so the slowest rank can differ from step to step (the
    // noise itself is checked against its distribution in test_sampling.cpp).
    SpeedFactors speed_factors;
    speed_factors.list = factors;
    StragglerOptions straggler;
    straggler.kind = StragglerKind::lognormal;
    straggler.sigma = 0.5;
    const ComputeModel model(speed_factors, straggler, 5);  // cluster_scenario's seed
    const auto column = run("noisy", ", straggler: {distribution: lognormal, sigma: 0.5}",
                            "algorithm: {name: ring_allreduce}");
    for (int s = 0; s < steps; ++s) {
      double slowest = 0;
      for (int r = 0; r < kRanks; ++r) slowest = std::max(slowest, per_rank * model.slowdown(r, s));
      CHECK(column[static_cast<std::size_t>(s)] == Approx(slowest).epsilon(1e-9));
    }
  }
}
