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
