// Mixing weights over a graph and the checks that make neighbour averaging meaningful: doubly
// stochastic (the mean is preserved), non-negative, connected (consensus is reached).
//   uniform:    W_ij = 1/(deg_i + 1) for j in N(i) and j = i (doubly stochastic on regular graphs)
//   metropolis: W_ij = 1/(1 + max(deg_i, deg_j)), W_ii = 1 - sum_j W_ij (Metropolis-Hastings;
//               doubly stochastic on any undirected graph)
//   explicit:   W_ij = W_ji = the third number of edge [i, j, w], W_ii = 1 - sum_j W_ij
#include "algorithms/decentralized/mixing.hpp"

#include <fmt/format.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "algorithms/decentralized/graphs.hpp"

namespace aggsim {

std::vector<ParamSpec> graph_param_specs() {
  return {
      ParamSpec("graph.kind", ParamKind::choice, "ring", "communication graph")
          .one_of({"ring", "torus", "hypercube", "exponential", "regular", "complete", "edges"}),
      ParamSpec("graph.rows", ParamKind::integer, "0", "torus: rows of the 2D torus (0: most square)")
          .between(0, 1 << 22),
      ParamSpec("graph.peers", ParamKind::choice, "all",
                "exponential: all offsets 2^i at once, or one per round rotating through 2^i")
          .one_of({"all", "one"}),
      ParamSpec("graph.degree", ParamKind::integer, "4", "regular: degree of the random regular graph")
          .between(1, 1 << 20),
      ParamSpec("graph.edges", ParamKind::rows, "", "edges: undirected edges [i, j] or [i, j, weight]"),
      ParamSpec(
          "weights", ParamKind::choice, "metropolis",
          "mixing weights: uniform 1/(deg+1), Metropolis-Hastings, or explicit (third number of each edge)")
          .one_of({"uniform", "metropolis", "explicit"}),
  };
}

namespace {

constexpr double kStochasticTolerance = 1e-9;

using EdgeWeights = std::map<std::pair<int, int>, double>;  // (min, max) -> weight

EdgeWeights explicit_weights(const Params& params) {
  if (params.text("graph.kind") != "edges" || !params.has("graph.edges"))
    throw ParamError("weights",
                     "explicit weights come from graph.edges rows [i, j, weight]: use graph.kind: edges");
  EdgeWeights w;
  for (const auto& row : params.rows("graph.edges")) {
    if (row.size() != 3)
      throw ParamError("graph.edges",
                       fmt::format("weights: explicit needs every edge as [i, j, weight] (edge [{}, {}] "
                                   "has no weight)",
                                   row[0], row.size() > 1 ? row[1] : -1.0));
    const int a = static_cast<int>(row[0]), b = static_cast<int>(row[1]);
    w[{std::min(a, b), std::max(a, b)}] = row[2];
  }
  return w;
}

MixingMatrix weigh(const InNeighbours& g, const std::string& weights, const EdgeWeights& given) {
  MixingMatrix m;
  m.p = static_cast<int>(g.size());
  m.self.assign(g.size(), 1.0);
  m.in.resize(g.size());
  m.out.resize(g.size());
  for (std::size_t i = 0; i < g.size(); ++i) {
    const double deg_i = static_cast<double>(g[i].size());
    for (int j : g[i]) {
      double w = 0;
      if (weights == "uniform")
        w = 1.0 / (deg_i + 1.0);
      else if (weights == "metropolis")
        w = 1.0 / (1.0 + std::max(deg_i, static_cast<double>(g[static_cast<std::size_t>(j)].size())));
      else
        w = given.at({std::min(static_cast<int>(i), j), std::max(static_cast<int>(i), j)});
      m.in[i].emplace_back(j, w);
      m.self[i] -= w;
      m.out[static_cast<std::size_t>(j)].push_back(static_cast<int>(i));
    }
  }
  return m;
}

// Rows sum to 1 by construction; checks signs and column sums.
void check_doubly_stochastic(const MixingMatrix& m, const std::string& key) {
  std::vector<double> column(static_cast<std::size_t>(m.p), 0.0);
  for (int i = 0; i < m.p; ++i) {
    const auto ui = static_cast<std::size_t>(i);
    if (m.self[ui] < -kStochasticTolerance)
      throw ParamError(key,
                       fmt::format("the mixing matrix is not doubly stochastic: rank {}'s weights on its "
                                   "neighbours sum to {} > 1, leaving it a negative self weight",
                                   i, 1.0 - m.self[ui]));
    column[ui] += m.self[ui];
    for (const auto& [j, w] : m.in[ui]) {
      if (w < 0)
        throw ParamError(key,
                         fmt::format("the mixing weight between ranks {} and {} is negative ({})", i, j, w));
      column[static_cast<std::size_t>(j)] += w;
    }
  }
  for (int j = 0; j < m.p; ++j)
    if (std::abs(column[static_cast<std::size_t>(j)] - 1.0) > kStochasticTolerance)
      throw ParamError(
          key, fmt::format("the mixing matrix is not doubly stochastic: column {} sums to {}, not 1, so "
                           "the global mean drifts (uniform weights need a regular graph; "
                           "weights: metropolis suits any undirected graph)",
                           j, column[static_cast<std::size_t>(j)]));
}

}  // namespace

MixingSchedule build_mixing(const Params& params, int p, std::uint64_t seed) {
  const std::string kind = params.text("graph.kind"), weights = params.text("weights");
  if (kind == "edges" && !params.has("graph.edges"))
    throw ParamError("graph.edges", "graph kind 'edges' needs graph.edges: [[i, j], ...]");
  if (kind != "edges" && params.has("graph.edges"))
    throw ParamError("graph.edges", fmt::format("only used with graph.kind: edges (kind is '{}')", kind));
  // Dense all-to-all exchange is what an all-reduce does better; keep memory bounded.
  if (kind == "complete" && p > kSpectralGapMaxRanks)
    throw ParamError("graph.kind",
                     fmt::format("a complete graph on {} ranks sends p(p-1) full models per step; "
                                 "limited to {} ranks (use ring_allreduce)",
                                 p, kSpectralGapMaxRanks));
  std::vector<InNeighbours> rounds;
  if (kind == "ring")
    rounds = {ring_graph(p)};
  else if (kind == "torus")
    rounds = {torus_graph(p, static_cast<int>(params.integer("graph.rows")))};
  else if (kind == "hypercube")
    rounds = {hypercube_graph(p)};
  else if (kind == "complete")
    rounds = {complete_graph(p)};
  else if (kind == "exponential")
    rounds = params.text("graph.peers") == "one" ? one_peer_exponential_rounds(p)
                                                 : std::vector<InNeighbours>{exponential_graph(p)};
  else if (kind == "regular")
    rounds = {random_regular_graph(p, static_cast<int>(params.integer("graph.degree")), seed)};
  else
    rounds = {edge_list_graph(p, params.rows("graph.edges"))};

  if (kind == "edges" && weights != "explicit")
    for (const auto& row : params.rows("graph.edges"))
      if (row.size() == 3)
        throw ParamError("weights", "graph.edges rows carry weights [i, j, w]: set weights: explicit");
  const EdgeWeights given = weights == "explicit" ? explicit_weights(params) : EdgeWeights{};
  const std::string key = weights == "explicit" ? "graph.edges" : "weights";
  MixingSchedule schedule;
  for (const auto& g : rounds) {
    schedule.rounds.push_back(weigh(g, weights, given));
    check_doubly_stochastic(schedule.rounds.back(), key);
  }
  return schedule;
}

double spectral_gap(const MixingSchedule& schedule) {
  const int p = schedule.rounds.front().p;
  if (p > kSpectralGapMaxRanks) return std::numeric_limits<double>::quiet_NaN();
  // Product over one period, P <- W_r P, applied row by row through the sparse W_r.
  Eigen::MatrixXd prod = Eigen::MatrixXd::Identity(p, p);
  for (const auto& w : schedule.rounds) {
    Eigen::MatrixXd next(p, p);
    for (int i = 0; i < p; ++i) {
      next.row(i) = w.self[static_cast<std::size_t>(i)] * prod.row(i);
      for (const auto& [j, wij] : w.in[static_cast<std::size_t>(i)]) next.row(i) += wij * prod.row(j);
    }
    prod.swap(next);
  }
  const Eigen::MatrixXd dev = prod - Eigen::MatrixXd::Constant(p, p, 1.0 / p);
  double sigma2 = 0;
  if ((prod - prod.transpose()).cwiseAbs().maxCoeff() < 1e-12) {
    Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> solver(dev, Eigen::EigenvaluesOnly);
    sigma2 = solver.eigenvalues().cwiseAbs().maxCoeff();
  } else {
    Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> solver(dev.transpose() * dev, Eigen::EigenvaluesOnly);
    sigma2 = std::sqrt(std::max(0.0, solver.eigenvalues().maxCoeff()));
  }
  return 1.0 - sigma2;
}

}  // namespace aggsim
