// 2D-torus all-reduce (ring per dimension): exact reductions, alpha-beta closed form, grid checks.
#include "alpha_beta.hpp"

using namespace aggsim::test;

TEST_CASE("2D-torus all-reduce gives every rank the exact reduction", "[torus2d][math]") {
  // Every p of the sweep runs: the default grid is the most square factorisation, 1 x p for a prime.
  check_identity_math("name: torus2d_allreduce");
  // A non-square grid chosen by the user.
  for (Scope scope : {Scope::model, Scope::layer}) {
    INFO(scope_name(scope));
    const auto e = check_reduction(identity_scenario("name: torus2d_allreduce, rows: 2", 12, "avg", scope));
    CHECK(e.max_abs_error <= summation_tolerance(12, e.reference_scale));
    CHECK(e.max_rank_spread == 0.0);
  }
}

TEST_CASE("2D-torus step time equals 2(c-1)(alpha + S/c beta) + 2(r-1)(alpha + S/p beta)",
          "[torus2d][formula]") {
  // Default grid: the most square factorisation (rows <= cols).
  const std::vector<std::array<int, 3>> grids = {{4, 2, 2},  {6, 2, 3},  {8, 2, 4}, {12, 3, 4},
                                                 {16, 4, 4}, {64, 8, 8}, {5, 1, 5}};
  for (const auto& [p, rows, cols] : grids)
    for (double S : {kSmall, kLarge})
      check_step_time("name: torus2d_allreduce", p, S, torus2d_cost(rows, cols, S));
  // Explicit rows.
  for (double S : {kSmall, kLarge})
    check_step_time("name: torus2d_allreduce, rows: 4", 8, S, torus2d_cost(4, 2, S));
}

TEST_CASE("2D-torus rejects rows that do not divide the rank count", "[torus2d]") {
  CHECK_THROWS_WITH(step_times(cluster_scenario("name: torus2d_allreduce, rows: 3", 8, "avg", 16)),
                    Catch::Contains("rows 3 does not divide the 8 ranks"));
}
