#pragma once
// Communication graph families for neighbour averaging, as in-neighbour lists (rank i receives
// from in[i]). Undirected families give symmetric lists. Each builder throws ParamError naming the
// key that makes the graph impossible for the rank count.
#include <cstdint>
#include <vector>

#include "sim/core/params.hpp"

namespace aggsim {

using InNeighbours = std::vector<std::vector<int>>;

// i +- 1 (mod p).
InNeighbours ring_graph(int p);
// 2D torus of rows x p/rows ranks, row-major; rows = 0 picks the most square factorization.
InNeighbours torus_graph(int p, int rows);
// i xor 2^k; p must be a power of two.
InNeighbours hypercube_graph(int p);
// Every pair.
InNeighbours complete_graph(int p);
// Static exponential graph (directed): i receives from i - 2^k (mod p) for every 2^k < p.
InNeighbours exponential_graph(int p);
// One-peer exponential graph, round k of ceil(log2 p): i receives from i - 2^k (mod p) only.
std::vector<InNeighbours> one_peer_exponential_rounds(int p);
// Random d-regular simple graph from `seed`: a circulant d-regular graph randomized by
// degree-preserving double-edge swaps (10 per edge), redrawn until connected.
InNeighbours random_regular_graph(int p, int degree, std::uint64_t seed);
// Undirected explicit edges: rows [i, j] or [i, j, weight]; weights are not read here.
InNeighbours edge_list_graph(int p, const NumberRows& edges);

}  // namespace aggsim
