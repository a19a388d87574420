// Compute model timing under alpha_beta: the overlapped backward/communication pipeline of
// bucketed by-layer aggregation, by-model aggregation, and synchronous stragglers.
#include <algorithm>
#include <catch2/catch.hpp>

#include "support/reduction_check.hpp"
#include "workload_support.hpp"

using namespace aggsim;
using namespace aggsim::test;

namespace {

constexpr int kRanks = 4;
constexpr double kSpeed = 1e9;  // 1Gf hosts

std::string layered(const std::string& table, const std::string& algorithm_extra,
                    const std::string& compute = "") {
  return cluster_scenario(
      kRanks, 3,
      fmt::format("model: {{layers: {}, batch: 2}}\nalgorithm: {{name: ring_allreduce{}}}\n{}", table,
                  algorithm_extra, compute));
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
