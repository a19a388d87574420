// Recursive doubling all-reduce: exact reductions, alpha-beta closed form.
#include "alpha_beta.hpp"

using namespace aggsim::test;

TEST_CASE("recursive doubling all-reduce gives every rank the exact reduction",
          "[recursive_doubling][math]") {
  check_identity_math("name: recursive_doubling_allreduce");
}

TEST_CASE("recursive doubling step time equals log2(p') (alpha + S beta) (+ fold)",
          "[recursive_doubling][formula]") {
  for (int p : {2, 3, 5, 6, 8, 12, 16, 64})
    for (double S : {kSmall, kLarge})
      check_step_time("name: recursive_doubling_allreduce", p, S, recursive_doubling_cost(p, S));
}
