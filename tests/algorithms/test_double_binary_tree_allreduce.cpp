// Double binary tree all-reduce: exact reductions; timing of its round schedule under alpha-beta.
#include "alpha_beta.hpp"

using namespace aggsim::test;

TEST_CASE("double binary tree all-reduce gives every rank the exact reduction", "[double_binary_tree][math]") {
  check_identity_math("name: double_binary_tree_allreduce");
  check_identity_math("name: double_binary_tree_allreduce, chunks: 1");
}

// p = 2: each rank is the root of one tree and the only child in the other, so in every period both
// ranks send one piece of S/(2C) to each other at once (full duplex): C periods of
// alpha + S/(2C beta) to reduce, C to broadcast: 2 C alpha + S/beta.
TEST_CASE("double binary tree on two ranks costs 2 chunks alpha + S beta", "[double_binary_tree][formula]") {
  for (int chunks : {1, 2, 8})
    for (double S : {kSmall, kLarge})
      check_step_time(fmt::format("name: double_binary_tree_allreduce, chunks: {}", chunks), 2, S,
                      2.0 * chunks * kAlpha + S / kBeta);
}

// p = 3: tree A is 0 -> 1 <- 2 (root rank 1), tree B is 2 -> 0 <- 1 (root rank 0). Each root
// receives its two children's pieces in the two rounds of a period, and rank 2, a leaf of both,
// sends its A and B pieces in different rounds, so both rounds are full from the first period on:
// 2C transfers to reduce, 2C to broadcast, each of S/(2C): 4C alpha + 2 S/beta.
TEST_CASE("double binary tree on three ranks costs 4 chunks alpha + 2 S beta", "[double_binary_tree][formula]") {
  for (int chunks : {1, 2, 8})
    for (double S : {kSmall, kLarge})
      check_step_time(fmt::format("name: double_binary_tree_allreduce, chunks: {}", chunks), 3, S,
                      4.0 * chunks * kAlpha + 2.0 * S / kBeta);
}

// p > 3: every round of the schedule has at most one send and one receive per rank, so each
// transfer costs exactly t = alpha + S/(2C beta) and the step is a whole number R of transfers.
// Bounds on R: the schedule has C + H - 1 reduce and C + H - 1 broadcast periods of two rounds
// (H = height of the in-order tree on 1..p = floor(log2 p), its root being the largest power of two <= p), so R <= 4 (C + H - 1); an inner
// node has two children, receives 2C pieces one at a time while reducing and sends 2C while
// broadcasting, so R >= 4C. The bandwidth term is therefore 2 S/beta (NCCL's figure) up to the
// pipeline fill, which is what makes the algorithm worth having.
TEST_CASE("double binary tree step is a whole number of unshared transfers within the schedule bounds",
          "[double_binary_tree][formula]") {
  for (int chunks : {2, 8})
    for (int p : {4, 5, 8, 12, 16, 64})
      for (double S : {kSmall, kLarge}) {
        const double t = kAlpha + S / (2.0 * chunks) / kBeta;
        const int H = floor_log2(p);
        INFO("p " << p << ", chunks " << chunks << ", S " << S);
        const auto times = step_times(
            cluster_scenario(fmt::format("name: double_binary_tree_allreduce, chunks: {}", chunks), p, "avg", 16,
                             fmt::format("{}B", S)));
        for (double time : times) {
          const double rounds = time / t;
          CHECK(std::abs(rounds - std::round(rounds)) < 1e-6);
          CHECK(std::round(rounds) >= 4 * chunks);
          CHECK(std::round(rounds) <= 4 * (chunks + H - 1));
        }
      }
}
