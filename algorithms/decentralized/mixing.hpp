#pragma once
// Communication graphs and their mixing matrices for neighbour averaging (decentralized SGD):
// x_i <- W_ii x_i + sum_j W_ij x_j over the in-neighbours j of i. W must be doubly stochastic so
// the global mean is preserved and every rank converges to it; how fast is set by the spectral
// gap 1 - sigma_2(W) (sigma_2: second largest singular value, |lambda_2| for symmetric W).
// Time-varying graphs (one-peer exponential) are a cyclic list of matrices, one per round.
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "sim/core/params.hpp"

namespace aggsim {

// One round's mixing matrix, stored sparse by rows (never dense: 16k ranks must fit).
struct MixingMatrix {
  int p = 0;
  std::vector<double> self;                             // W_ii
  std::vector<std::vector<std::pair<int, double>>> in;  // row i: (j, W_ij), j != i, W_ij > 0
  std::vector<std::vector<int>> out;                    // ranks k with W_ki > 0: who needs x_i
};

struct MixingSchedule {
  std::vector<MixingMatrix> rounds;  // round r uses rounds[r % rounds.size()]
  const MixingMatrix& at(std::int64_t round) const {
    return rounds[static_cast<std::size_t>(round % static_cast<std::int64_t>(rounds.size()))];
  }
};

// The graph options of an algorithm (keys graph.kind, graph.degree, graph.rows, graph.peers,
// graph.edges, weights), shared by every algorithm that mixes over a graph.
std::vector<ParamSpec> graph_param_specs();

// Builds the schedule for `world` ranks (the random regular graph from `seed`) and checks it:
// edges within range, connected, doubly stochastic, non-negative. Throws ParamError naming the
// key at fault (graph.edges, graph.degree, weights, ...).
MixingSchedule build_mixing(const Params& params, int world, std::uint64_t seed);

// Largest rank count for which spectral_gap() computes (dense eigen-decomposition, O(p^3)).
constexpr int kSpectralGapMaxRanks = 2048;

// 1 - sigma_2 of the product of one period of rounds (the whole matrix for static graphs).
// Dense: the product is formed column by column through the sparse rows, then Eigen's
// SelfAdjointEigenSolver runs on the symmetric matrix (P - J) (symmetric P) or (P - J)^T (P - J)
// (otherwise), J = 11^T / p. NaN when p > kSpectralGapMaxRanks.
double spectral_gap(const MixingSchedule& schedule);

}  // namespace aggsim
