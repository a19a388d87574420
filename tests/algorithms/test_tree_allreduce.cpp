// Binomial-tree all-reduce (reduce + broadcast, optionally pipelined): exact reductions, alpha-beta
// closed form of the schedule.
#include "alpha_beta.hpp"

using namespace aggsim::test;

TEST_CASE("tree all-reduce gives every rank the exact reduction", "[tree][math]") {
  check_identity_math("name: tree_allreduce");
  check_identity_math("name: tree_allreduce, chunks: 3");
}

TEST_CASE("tree all-reduce step time equals 2 ceil(log2 p) (chunks alpha + S beta)", "[tree][formula]") {
  for (int chunks : {1, 4})
    for (int p : {2, 3, 5, 6, 8, 12, 16, 64})
      for (double S : {kSmall, kLarge})
        check_step_time(fmt::format("name: tree_allreduce, chunks: {}", chunks), p, S,
                        tree_cost(p, S, chunks));
}
