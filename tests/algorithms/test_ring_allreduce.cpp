// Ring all-reduce: exact reductions on every rank, and the alpha-beta closed form.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "support/reduction_check.hpp"

using namespace aggsim;
using namespace aggsim::test;

namespace {

// Cluster links: 10 Gb/s = 1.25e9 B/s and 1 us each; a transfer crosses two links: alpha = 2 us.
std::string ring_scenario(int p, const std::string& op, int proxy_dim, const std::string& size = "1MB") {
  return fmt::format(R"(
seed: 11
ranks: {p}
steps: 2
platform: {{topology: cluster, hosts: {p}, bandwidth: 10Gbps, latency: 1us}}
network: alpha_beta
model: {{size: {size}, proxy_dim: {dim}}}
algorithm: {{name: ring_allreduce, op: {op}}}
)", fmt::arg("p", p), fmt::arg("op", op), fmt::arg("dim", proxy_dim), fmt::arg("size", size));
}

}  // namespace

TEST_CASE("ring all-reduce gives every rank the exact reduction", "[ring][math]") {
  for (const std::string op : {"avg", "sum", "min", "max"}) {
    for (int p : {1, 2, 3, 5, 8}) {
      // 1001 is not divisible by 2, 3, 5 or 8: uneven chunks.
      for (int dim : {1001, 64}) {
        INFO("op " << op << ", p " << p << ", proxy_dim " << dim);
        const auto e = check_reduction(ring_scenario(p, op, dim));
        CHECK(e.checked_vectors == 2 * p);
        CHECK(e.max_abs_error <= summation_tolerance(p, e.reference_scale));
        // Every rank holds the very same bits.
        CHECK(e.max_rank_spread == 0.0);
      }
    }
  }
}

TEST_CASE("ring all-reduce with custom_avg divides by the given denominator", "[ring][math]") {
  const auto e = check_reduction(ring_scenario(4, "custom_avg", 100) , {"algorithm.denominator=3"});
  CHECK(e.max_abs_error <= summation_tolerance(4, e.reference_scale));
}

TEST_CASE("ring all-reduce step time equals 2(p-1)(alpha + (S/p)/beta) under alpha_beta", "[ring][formula]") {
  const double alpha = 2e-6, beta = 10e9 / 8;
  for (int p : {2, 3, 8, 64}) {
    // S divisible by 4p so chunks are equal on the wire.
    for (double size : {1536000.0, 96000000.0}) {
      INFO("p " << p << ", S " << size);
      const auto times = step_times(ring_scenario(p, "avg", 16, fmt::format("{}B", size)));
      const double expected = 2.0 * (p - 1) * (alpha + size / p / beta);
      for (double t : times) CHECK(t == Approx(expected).epsilon(1e-9));
    }
  }
}

TEST_CASE("ring all-reduce with math off has the same timing as with math on", "[ring][formula]") {
  const auto on = step_times(ring_scenario(8, "avg", 1000));
  const auto off = step_times(ring_scenario(8, "avg", 1000), {"model.math=off"});
  REQUIRE(on.size() == off.size());
  for (std::size_t i = 0; i < on.size(); ++i) CHECK(on[i] == off[i]);
}

TEST_CASE("under SimGrid's default LV08 a ring step is 2(p-1)(13.01 alpha + (S/p) 1.05/(0.97 beta))", "[ring][formula]") {
  // LV08: latency factor 13.01, bandwidth factor 0.97, and 5 % of each link taken by the reverse
  // (ACK) crosstraffic of the neighbour's flow: users comparing with alpha-beta formulas need this.
  const double alpha = 2e-6, beta = 10e9 / 8;
  for (int p : {4, 16}) {
    const double size = 6.4e7;
    const auto times = step_times(ring_scenario(p, "avg", 16, "64MB"), {"network=lv08"});
    const double expected = 2.0 * (p - 1) * (13.01 * alpha + size / p * 1.05 / (0.97 * beta));
    for (double t : times) CHECK(t == Approx(expected).epsilon(1e-9));
  }
}

TEST_CASE("SimGrid --cfg flags pass through and override the network preset", "[ring][formula]") {
  // LV08 with its factors neutralised is plain alpha-beta again.
  const double alpha = 2e-6, beta = 10e9 / 8, size = 6.4e7;
  const int p = 8;
  const auto times = step_times(ring_scenario(p, "avg", 16, "64MB"), {"network=lv08"},
                                {"--cfg=network/latency-factor:1", "--cfg=network/bandwidth-factor:1",
                                 "--cfg=network/crosstraffic:0", "--cfg=network/TCP-gamma:0"});
  for (double t : times) CHECK(t == Approx(2.0 * (p - 1) * (alpha + size / p / beta)).epsilon(1e-9));
}
