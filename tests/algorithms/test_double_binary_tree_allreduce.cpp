// Double binary tree all-reduce: exact reductions; timing of its round schedule under alpha-beta.
#include "alpha_beta.hpp"

using namespace aggsim::test;

TEST_CASE("double binary tree all-reduce gives every rank the exact reduction",
          "[double_binary_tree][math]") {
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
TEST_CASE("double binary tree on three ranks costs 4 chunks alpha + 2 S beta",
          "[double_binary_tree][formula]") {
  for (int chunks : {1, 2, 8})
    for (double S : {kSmall, kLarge})
      check_step_time(fmt::format("name: double_binary_tree_allreduce, chunks: {}", chunks), 3, S,
                      4.0 * chunks * kAlpha + 2.0 * S / kBeta);
}

// p > 3: the exact count. Every round has at most one send and one receive per rank, so each
// transfer costs exactly t = alpha + S/(2C beta) and the step is a whole number R of transfers: the
// longest chain of transfers where each one waits for the previous round of both its ranks (a rank
// with nothing to do in a round moves on at once). `double_binary_tree_transfers` (alpha_beta.hpp) builds
// that chain from the published definition, independently of the algorithm's code:
//  - tree A: in-order binary tree on positions 1..p, rank r at position r+1, root at the largest
//    power of two 2^H <= p; the node at x = 2^j m (m odd, j >= 1) has children x - 2^(j-1) and the
//    first of x + 2^(j-1), x + 2^(j-2), ... that is <= p. Tree B: position x holds rank (x-2) mod p.
//  - reduce: the edge (v -> parent) carries piece k - height(v) in period k, for C + H - 1 periods;
//    broadcast: the edge (parent -> v) carries piece k - depth(v) + 1, for C + D - 1 periods; each
//    period is two rounds, an edge's round being its colour (siblings differ, the two parent edges
//    of a rank differ; chains coloured alternately from the first uncoloured edge, tree A first).
// With H = D (both trees have the shape of the in-order tree on 1..p), every chain has at most
// 2 (C + H - 1) rounds in each phase, so R <= 4 (C + H - 1), and R >= 4C (an inner node receives 2C
// pieces one at a time, then sends 2C). Closed forms that follow:
//  - p = 2^k - 1 (perfect trees, every inner node has two children): both rounds of every period
//    lie on the critical chain, R = 4 (C + k - 2) = 4 (C + H - 1).
//  - p = 2^k >= 4: each root has a single child (tree A's root 2^k has only 2^(k-1), and is a leaf
//    of tree B), so in the last reduce period and the first broadcast period only the two root
//    edges are active and the chain crosses one round of each instead of two: R = 4 (C + H - 1) - 2
//    = 4C + 4 log2 p - 6.
//  - other p: between the two; the deficit depends on which edges of the partly filled bottom level
//    share a colour (e.g. 4C + 3 for p = 5, 4C + 8 for p = 13, 4C + 7 + [C > 1] for p = 12), so the
//    test takes R from the model.
// These are the counts of the first step, where all ranks start together. There is no barrier
// between steps: a rank that has finished starts the next step's reduce while others still
// broadcast, so a later step (end minus the previous step's end) can be shorter; with C = 1 it is
// for p = 13, 16, 64 (e.g. 14 then 13 transfers for p = 16). The model runs the steps back to back.
TEST_CASE("double binary tree schedule model matches its closed forms", "[double_binary_tree][formula]") {
  for (int C : {1, 4, 8}) {
    CHECK(double_binary_tree_transfers(2, C) == 2 * C);
    CHECK(double_binary_tree_transfers(3, C) == 4 * C);
    for (int k = 2; k <= 7; ++k) {
      INFO("C " << C << ", k " << k);
      CHECK(double_binary_tree_transfers(1 << k, C) == 4 * C + 4 * k - 6);
      CHECK(double_binary_tree_transfers((1 << k) - 1, C) == 4 * (C + k - 2));
    }
  }
}

TEST_CASE("double binary tree step time equals the schedule's critical chain of unshared transfers",
          "[double_binary_tree][formula]") {
  for (int C : {1, 4, 8})
    for (int p : {2, 3, 4, 5, 8, 12, 13, 16, 64})
      for (double S : {kSmall, kLarge}) {
        const double t = kAlpha + S / (2.0 * C) / kBeta;
        const auto times =
            step_times(cluster_scenario(fmt::format("name: double_binary_tree_allreduce, chunks: {}", C), p,
                                        "avg", 16, fmt::format("{}B", S)));
        const std::vector<int> R = double_binary_tree_transfers(p, C, static_cast<int>(times.size()));
        for (std::size_t s = 0; s < times.size(); ++s) {
          INFO("p " << p << ", C " << C << ", S " << S << ", step " << s << ", transfers " << R[s]);
          CHECK(R[s] <= 4 * (C + floor_log2(p) - 1));
          CHECK(times[s] == Approx(R[s] * t).epsilon(1e-9));
        }
      }
}
