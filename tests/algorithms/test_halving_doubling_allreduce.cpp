// Recursive halving-doubling (Rabenseifner) all-reduce: exact reductions, alpha-beta closed form.
#include "alpha_beta.hpp"

using namespace aggsim::test;

TEST_CASE("halving-doubling all-reduce gives every rank the exact reduction", "[halving_doubling][math]") {
  check_identity_math("name: halving_doubling_allreduce");
}

TEST_CASE("halving-doubling step time equals 2 log2(p') alpha + 2 (p'-1)/p' S beta (+ fold)",
          "[halving_doubling][formula]") {
  for (int p : {2, 3, 5, 6, 8, 12, 16, 64})
    for (double S : {kSmall, kLarge})
      check_step_time("name: halving_doubling_allreduce", p, S, halving_doubling_cost(p, S));
}
