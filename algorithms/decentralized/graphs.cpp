// Graph families for neighbour averaging. All are simple graphs (no self-loops, no duplicate
// edges); the regular one is drawn from the scenario seed so every rank builds the same graph.
#include "algorithms/decentralized/graphs.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <utility>

#include "sim/core/random.hpp"

namespace aggsim {

namespace {

int mod(std::int64_t a, int n) {
  return static_cast<int>(((a % n) + n) % n);
}

// Adds j to i's list unless it is i itself or already there (small p: 2x2 tori, 2-rank rings).
void link(InNeighbours& g, int i, int j) {
  auto& list = g[static_cast<std::size_t>(i)];
  if (i != j && std::find(list.begin(), list.end(), j) == list.end()) list.push_back(j);
}

InNeighbours undirected_from(int p, const std::set<std::pair<int, int>>& edges) {
  InNeighbours g(static_cast<std::size_t>(p));
  for (const auto& [a, b] : edges) {
    link(g, a, b);
    link(g, b, a);
  }
  for (auto& list : g) std::sort(list.begin(), list.end());
  return g;
}

bool connected(const InNeighbours& g) {
  if (g.empty()) return true;
  std::vector<char> seen(g.size(), 0);
  std::vector<int> stack = {0};
  seen[0] = 1;
  std::size_t reached = 1;
  while (!stack.empty()) {
    const int i = stack.back();
    stack.pop_back();
    for (int j : g[static_cast<std::size_t>(i)])
      if (!seen[static_cast<std::size_t>(j)]) {
        seen[static_cast<std::size_t>(j)] = 1;
        ++reached;
        stack.push_back(j);
      }
  }
  return reached == g.size();
}

}  // namespace

InNeighbours ring_graph(int p) {
  InNeighbours g(static_cast<std::size_t>(p));
  for (int i = 0; i < p; ++i) {
    link(g, i, mod(i - 1, p));
    link(g, i, mod(i + 1, p));
  }
  return g;
}

InNeighbours torus_graph(int p, int rows) {
  if (rows == 0) {
    rows = static_cast<int>(std::sqrt(static_cast<double>(p)));
    while (p % rows != 0) --rows;
  }
  if (p % rows != 0)
    throw ParamError("graph.rows",
                     fmt::format("{} rows do not divide the {} ranks into a 2D torus", rows, p));
  const int cols = p / rows;
  InNeighbours g(static_cast<std::size_t>(p));
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) {
      const int i = r * cols + c;
      link(g, i, mod(r - 1, rows) * cols + c);
      link(g, i, mod(r + 1, rows) * cols + c);
      link(g, i, r * cols + mod(c - 1, cols));
      link(g, i, r * cols + mod(c + 1, cols));
    }
  return g;
}

InNeighbours hypercube_graph(int p) {
  if ((p & (p - 1)) != 0)
    throw ParamError("graph.kind",
                     fmt::format("a hypercube needs a power-of-two number of ranks (got {})", p));
  InNeighbours g(static_cast<std::size_t>(p));
  for (int i = 0; i < p; ++i)
    for (int bit = 1; bit < p; bit <<= 1) link(g, i, i ^ bit);
  return g;
}

InNeighbours complete_graph(int p) {
  InNeighbours g(static_cast<std::size_t>(p));
  for (int i = 0; i < p; ++i)
    for (int j = 0; j < p; ++j) link(g, i, j);
  return g;
}

InNeighbours exponential_graph(int p) {
  InNeighbours g(static_cast<std::size_t>(p));
  for (int i = 0; i < p; ++i)
    for (std::int64_t hop = 1; hop < p; hop <<= 1) link(g, i, mod(i - hop, p));
  return g;
}

std::vector<InNeighbours> one_peer_exponential_rounds(int p) {
  std::vector<InNeighbours> rounds;
  for (std::int64_t hop = 1; hop < p; hop <<= 1) {
    InNeighbours g(static_cast<std::size_t>(p));
    for (int i = 0; i < p; ++i) link(g, i, mod(i - hop, p));
    rounds.push_back(std::move(g));
  }
  if (rounds.empty()) rounds.emplace_back(static_cast<std::size_t>(p));  // one rank: nothing to mix
  return rounds;
}

InNeighbours random_regular_graph(int p, int degree, std::uint64_t seed) {
  if (degree >= p)
    throw ParamError("graph.degree",
                     fmt::format("a {}-regular graph needs more than {} ranks", degree, degree));
  if ((static_cast<std::int64_t>(p) * degree) % 2 != 0)
    throw ParamError("graph.degree", fmt::format("no {}-regular graph on an odd number of ranks ({}): "
                                                 "ranks x degree must be even",
                                                 degree, p));
  if (degree == 1 && p > 2)
    throw ParamError("graph.degree", "a 1-regular graph is a matching: it cannot connect more than 2 ranks");
  // Circulant start: offsets 1..d/2 each way, plus the antipode p/2 when d is odd (p is then even).
  std::set<std::pair<int, int>> edges;
  auto add = [&](int a, int b) { edges.emplace(std::min(a, b), std::max(a, b)); };
  for (int i = 0; i < p; ++i) {
    for (int k = 1; k <= degree / 2; ++k) add(i, mod(i + k, p));
    if (degree % 2 == 1) add(i, mod(i + p / 2, p));
  }
  for (std::uint64_t attempt = 0; attempt < 50; ++attempt) {
    Rng rng = make_rng(seed, Stream::topology, 0x7265677572ULL, attempt);  // "regular"
    std::vector<std::pair<int, int>> list(edges.begin(), edges.end());
    const std::size_t swaps = 10 * list.size();
    for (std::size_t s = 0; s < swaps && list.size() >= 2; ++s) {
      const std::size_t x = uniform_below(rng, list.size()), y = uniform_below(rng, list.size());
      auto [a, b] = list[x];
      auto [c, d] = list[y];
      if (uniform_below(rng, 2) == 1) std::swap(c, d);
      // (a,b),(c,d) -> (a,d),(c,b): degrees unchanged; keep the graph simple.
      if (a == d || c == b || a == c || b == d) continue;
      const std::pair<int, int> e1(std::min(a, d), std::max(a, d)), e2(std::min(c, b), std::max(c, b));
      if (edges.count(e1) || edges.count(e2)) continue;
      edges.erase(list[x]);
      edges.erase(list[y]);
      edges.insert(e1);
      edges.insert(e2);
      list[x] = e1;
      list[y] = e2;
    }
    InNeighbours g = undirected_from(p, edges);
    if (connected(g)) return g;
  }
  throw ParamError("graph.degree",
                   fmt::format("could not draw a connected {}-regular graph on {} ranks", degree, p));
}

InNeighbours edge_list_graph(int p, const NumberRows& edges) {
  if (edges.empty())
    throw ParamError("graph.edges", "graph kind 'edges' needs a non-empty list of edges [i, j]");
  std::set<std::pair<int, int>> set;
  for (std::size_t e = 0; e < edges.size(); ++e) {
    const auto& row = edges[e];
    if (row.size() != 2 && row.size() != 3)
      throw ParamError("graph.edges", fmt::format("edge {} must be [i, j] or [i, j, weight] (got {} numbers)",
                                                  e, row.size()));
    for (int k = 0; k < 2; ++k)
      if (row[static_cast<std::size_t>(k)] != std::floor(row[static_cast<std::size_t>(k)]) ||
          row[static_cast<std::size_t>(k)] < 0 || row[static_cast<std::size_t>(k)] >= p)
        throw ParamError("graph.edges", fmt::format("edge {}: rank {} is not an integer in [0, {})", e,
                                                    row[static_cast<std::size_t>(k)], p));
    const int a = static_cast<int>(row[0]), b = static_cast<int>(row[1]);
    if (a == b) throw ParamError("graph.edges", fmt::format("edge {}: [{}, {}] is a self-loop", e, a, b));
    if (!set.emplace(std::min(a, b), std::max(a, b)).second)
      throw ParamError("graph.edges", fmt::format("edge {}: [{}, {}] is listed twice", e, a, b));
  }
  InNeighbours g = undirected_from(p, set);
  if (!connected(g))
    throw ParamError("graph.edges", "the graph is not connected: ranks in different parts would never agree");
  return g;
}

}  // namespace aggsim
