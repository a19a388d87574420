// Ring all-reduce: exact reductions on every rank, and the alpha-beta closed form.
#include "alpha_beta.hpp"

using namespace aggsim::test;

namespace {
const std::string kRing = "name: ring_allreduce";
}

TEST_CASE("ring all-reduce gives every rank the exact reduction", "[ring][math]") {
  check_identity_math(kRing);
  // 64 divides evenly for p in {2, 8}: equal chunks too.
  for (int p : {2, 3, 8}) {
    const auto e = check_reduction(cluster_scenario(kRing, p, "avg", 64));
    CHECK(e.max_abs_error <= summation_tolerance(p, e.reference_scale));
    CHECK(e.max_rank_spread == 0.0);
  }
}

TEST_CASE("ring all-reduce step time equals 2(p-1)(alpha + (S/p)/beta) under alpha_beta", "[ring][formula]") {
  for (int p : {2, 3, 8, 64})
    for (double S : {kSmall, kLarge}) check_step_time(kRing, p, S, ring_cost(p, S));
}

TEST_CASE("ring all-reduce with math off has the same timing as with math on", "[ring][formula]") {
  const auto on = step_times(cluster_scenario(kRing, 8, "avg", 1000));
  const auto off = step_times(cluster_scenario(kRing, 8, "avg", 1000), {"model.math=off"});
  REQUIRE(on.size() == off.size());
  for (std::size_t i = 0; i < on.size(); ++i) CHECK(on[i] == off[i]);
}

TEST_CASE("under SimGrid's default LV08 a ring step is 2(p-1)(13.01 alpha + (S/p) 1.05/(0.97 beta))",
          "[ring][formula]") {
  // LV08: latency factor 13.01, bandwidth factor 0.97, and 5 % of each link taken by the reverse
  // (ACK) crosstraffic of the neighbour's flow: users comparing with alpha-beta formulas need this.
  const double alpha = 2e-6, beta = 10e9 / 8;
  for (int p : {4, 16}) {
    const double size = 6.4e7;
    const auto times = step_times(cluster_scenario(kRing, p, "avg", 16, "64MB"), {"network=lv08"});
    const double expected = 2.0 * (p - 1) * (13.01 * alpha + size / p * 1.05 / (0.97 * beta));
    for (double t : times) CHECK(t == Approx(expected).epsilon(1e-9));
  }
}

TEST_CASE("SimGrid --cfg flags pass through and override the network preset", "[ring][formula]") {
  // LV08 with its factors neutralised is plain alpha-beta again.
  const double alpha = 2e-6, beta = 10e9 / 8, size = 6.4e7;
  const int p = 8;
  const auto times = step_times(cluster_scenario(kRing, p, "avg", 16, "64MB"), {"network=lv08"},
                                {"--cfg=network/latency-factor:1", "--cfg=network/bandwidth-factor:1",
                                 "--cfg=network/crosstraffic:0", "--cfg=network/TCP-gamma:0"});
  for (double t : times) CHECK(t == Approx(2.0 * (p - 1) * (alpha + size / p / beta)).epsilon(1e-9));
}
