// Neighbour averaging: the global mean is preserved, the consensus distance contracts at least as
// fast as the spectral gap says, the reported gap equals the closed forms of known graphs, and
// bad graphs or weights are rejected when the scenario is loaded.
#include <fmt/format.h>

#include <Eigen/Dense>
#include <catch2/catch.hpp>
#include <cmath>
#include <complex>
#include <set>

#include "algorithms/decentralized/graphs.hpp"
#include "gossip_run.hpp"
#include "support/cli.hpp"

using namespace aggsim;
using namespace aggsim::test;

namespace {

const double kPi = 3.14159265358979323846;

std::string scenario(int p, const std::string& graph, const std::string& extra = "", int steps = 2,
                     int dim = 200) {
  return fmt::format(R"(
seed: 5
ranks: {p}
steps: {steps}
platform: {{topology: cluster, hosts: {p}}}
network: alpha_beta
model: {{size: 64kB, proxy_dim: {dim}}}
algorithm:
  name: neighbor_averaging
  graph: {graph}
{extra}
compute: {{reduce_speed: 0}}
)",
                     fmt::arg("p", p), fmt::arg("steps", steps), fmt::arg("dim", dim),
                     fmt::arg("graph", graph), fmt::arg("extra", extra));
}

// Largest |eigenvalue| over the non-constant eigenvectors of a circulant mixing matrix whose row 0
// has weight w on offsets `offsets` (and 1 - sum on itself); circulants are normal, so this is sigma_2.
double circulant_sigma2(int p, const std::vector<int>& offsets, double w) {
  double worst = 0;
  for (int m = 1; m < p; ++m) {
    std::complex<double> lambda(1.0 - w * static_cast<double>(offsets.size()), 0.0);
    for (int o : offsets) lambda += w * std::polar(1.0, -2.0 * kPi * m * o / p);
    worst = std::max(worst, std::abs(lambda));
  }
  return worst;
}

struct GraphCase {
  std::string name;
  int p;
  std::string graph;
  std::string extra;
  double expected_gap;  // closed form, or NaN when only the reported gap is checked
};

std::vector<GraphCase> graph_cases() {
  const double nan = std::nan("");
  // Ring, uniform 1/3: lambda_k = (1 + 2 cos(2 pi k / p)) / 3.
  const double ring16 = 1.0 - circulant_sigma2(16, {1, 15}, 1.0 / 3);
  // 4 x 6 torus, uniform 1/5: lambda = (1 + 2 cos(2 pi a / 4) + 2 cos(2 pi b / 6)) / 5.
  double torus_sigma = 0;
  for (int a = 0; a < 4; ++a)
    for (int b = 0; b < 6; ++b)
      if (a || b)
        torus_sigma = std::max(
            torus_sigma, std::abs(1 + 2 * std::cos(2 * kPi * a / 4) + 2 * std::cos(2 * kPi * b / 6)) / 5);
  // Hypercube of dimension 4, uniform 1/5: lambda_m = 1 - 2m/5, m = 1..4 -> max |.| = 3/5.
  // Exponential graph on 16 ranks, offsets 1, 2, 4, 8 (directed), weight 1/5 each.
  const double exp16 = 1.0 - circulant_sigma2(16, {1, 2, 4, 8}, 1.0 / 5);
  return {
      {"ring", 16, "{kind: ring}", "  weights: uniform", ring16},
      {"torus", 24, "{kind: torus, rows: 4}", "  weights: uniform", 1.0 - torus_sigma},
      {"hypercube", 16, "{kind: hypercube}", "  weights: uniform", 1.0 - 3.0 / 5},
      {"complete", 8, "{kind: complete}", "", 1.0},
      {"exponential (all peers)", 16, "{kind: exponential, peers: all}", "  weights: uniform", exp16},
      // Over one period of log2(16) rounds the one-peer graph averages exactly.
      {"exponential (one peer)", 16, "{kind: exponential, peers: one}", "", 1.0},
      {"random regular", 32, "{kind: regular, degree: 4}", "", nan},
      {"edges (metropolis)", 6,
       "{kind: edges, edges: [[0, 1], [1, 2], [2, 0], [2, 3], [3, 4], [4, 5], [5, 3]]}", "", nan},
  };
}

}  // namespace

TEST_CASE("neighbour averaging preserves the global mean on every graph", "[neighbor_averaging][math]") {
  for (const auto& c : graph_cases()) {
    INFO(c.name);
    const GossipRun run = run_gossip(scenario(c.p, c.graph, c.extra));
    REQUIRE(run.steps.size() == 2);
    for (const auto& s : run.steps) {
      const double drift = (rank_mean(s.after) - rank_mean(s.before)).cwiseAbs().maxCoeff();
      CHECK(drift <= 1e-5);
      CHECK(consensus_distance(s.after) < consensus_distance(s.before));
    }
  }
}

TEST_CASE("the reported spectral gap equals the closed form of known graphs",
          "[neighbor_averaging][spectral]") {
  for (const auto& c : graph_cases()) {
    if (std::isnan(c.expected_gap)) continue;
    INFO(c.name);
    const GossipRun run = run_gossip(scenario(c.p, c.graph, c.extra, 1, 4));
    CHECK(run.fields.at("spectral_gap") == Approx(c.expected_gap).margin(1e-9));
  }
}

TEST_CASE("the reported spectral gap of an explicit graph equals a direct Metropolis computation",
          "[neighbor_averaging][spectral]") {
  // Two triangles joined by the edge 2-3; Metropolis weights 1/(1 + max(deg_i, deg_j)).
  const std::vector<std::pair<int, int>> edges = {{0, 1}, {1, 2}, {2, 0}, {2, 3}, {3, 4}, {4, 5}, {5, 3}};
  Eigen::MatrixXd w = Eigen::MatrixXd::Zero(6, 6);
  std::vector<int> deg(6, 0);
  for (auto [a, b] : edges) ++deg[a], ++deg[b];
  for (auto [a, b] : edges) w(a, b) = w(b, a) = 1.0 / (1 + std::max(deg[a], deg[b]));
  for (int i = 0; i < 6; ++i) w(i, i) = 1.0 - w.row(i).sum();
  Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> solver(w);
  const auto ev = solver.eigenvalues();  // ascending; the last is 1
  const double expected = 1.0 - std::max(std::abs(ev[0]), std::abs(ev[4]));
  const GossipRun run = run_gossip(scenario(6, graph_cases().back().graph, "", 1, 4));
  CHECK(run.fields.at("spectral_gap") == Approx(expected).margin(1e-9));
}

TEST_CASE("consensus distance contracts by at least (1 - gap)^2 per round",
          "[neighbor_averaging][spectral]") {
  for (const auto& c : graph_cases()) {
    for (int rounds : {1, 3}) {
      INFO(c.name << ", rounds " << rounds);
      const GossipRun run =
          run_gossip(scenario(c.p, c.graph, c.extra + fmt::format("\n  rounds: {}", rounds)));
      const double gap = std::isnan(c.expected_gap) ? run.fields.at("spectral_gap") : c.expected_gap;
      REQUIRE(gap > 0);
      // A period-long product bounds the contraction per period; one round of a static graph is a period.
      const double periods = rounds / run.fields.at("mixing_period_rounds");
      const double bound = std::pow(1.0 - gap, 2.0 * std::floor(periods));
      for (const auto& s : run.steps) {
        const double before = consensus_distance(s.before), after = consensus_distance(s.after);
        CHECK(after <= bound * before * (1 + 1e-6) + 1e-9);
      }
    }
  }
}

TEST_CASE("one-peer exponential graph reaches the exact average after log2(p) rounds",
          "[neighbor_averaging][math]") {
  for (int p : {8, 16, 32}) {
    const int rounds = static_cast<int>(std::log2(p));
    INFO("p " << p);
    const GossipRun run =
        run_gossip(scenario(p, "{kind: exponential, peers: one}", fmt::format("  rounds: {}", rounds)));
    for (const auto& s : run.steps) {
      const Eigen::VectorXd mean = rank_mean(s.before);
      for (const auto& x : s.after) CHECK((x.cast<double>() - mean).cwiseAbs().maxCoeff() <= 1e-5);
    }
  }
}

TEST_CASE("op sum scales the average estimate by p", "[neighbor_averaging][math]") {
  const GossipRun avg = run_gossip(scenario(16, "{kind: ring}"));
  const GossipRun sum = run_gossip(scenario(16, "{kind: ring}", "  op: sum"));
  for (std::size_t r = 0; r < 16; ++r)
    CHECK((sum.steps[0].after[r] - 16.0f * avg.steps[0].after[r]).cwiseAbs().maxCoeff() == 0.0f);
}

TEST_CASE("a random regular graph is simple, d-regular, connected and fixed by the seed",
          "[neighbor_averaging][graph]") {
  for (auto [p, d] : {std::pair<int, int>{32, 4}, {50, 3}, {1000, 6}}) {
    INFO("p " << p << ", d " << d);
    const InNeighbours g = random_regular_graph(p, d, 17);
    CHECK(g == random_regular_graph(p, d, 17));
    CHECK(g != random_regular_graph(p, d, 18));
    std::vector<char> seen(static_cast<std::size_t>(p), 0);
    std::vector<int> stack = {0};
    seen[0] = 1;
    for (int i = 0; i < p; ++i) {
      const auto& n = g[static_cast<std::size_t>(i)];
      CHECK(n.size() == static_cast<std::size_t>(d));
      CHECK(std::set<int>(n.begin(), n.end()).size() == n.size());
      for (int j : n) {
        CHECK(j != i);
        const auto& back = g[static_cast<std::size_t>(j)];
        CHECK(std::find(back.begin(), back.end(), i) != back.end());
      }
    }
    while (!stack.empty()) {
      const int i = stack.back();
      stack.pop_back();
      for (int j : g[static_cast<std::size_t>(i)])
        if (!seen[static_cast<std::size_t>(j)]) seen[static_cast<std::size_t>(j)] = 1, stack.push_back(j);
    }
    CHECK(std::count(seen.begin(), seen.end(), 1) == p);
  }
}

TEST_CASE("the doubly-stochastic check rejects bad graphs and weights at load time",
          "[neighbor_averaging][cli]") {
  struct Bad {
    std::string graph, extra, key, words;
  };
  const std::vector<Bad> cases = {
      // A path: uniform weights 1/(deg+1) give column sums != 1.
      {"{kind: edges, edges: [[0, 1], [1, 2], [2, 3], [3, 4], [4, 5]]}", "  weights: uniform",
       "algorithm.weights", "not doubly stochastic"},
      // Explicit weights whose sum at rank 1 exceeds 1.
      {"{kind: edges, edges: [[0, 1, 0.7], [1, 2, 0.5], [2, 3, 0.5], [3, 4, 0.5], [4, 5, 0.5]]}",
       "  weights: explicit", "algorithm.graph.edges", "not doubly stochastic"},
      {"{kind: edges, edges: [[0, 1], [2, 3], [4, 5]]}", "", "algorithm.graph.edges", "not connected"},
      {"{kind: edges, edges: [[0, 1], [1, 9]]}", "", "algorithm.graph.edges", "not an integer in [0, 6)"},
      {"{kind: hypercube}", "", "algorithm.graph.kind", "power-of-two"},
      {"{kind: ring}", "  op: max", "algorithm.op", "cannot compute op max"},
  };
  const auto dir = fresh_dir("bad-graph");
  for (const auto& c : cases) {
    INFO(c.graph << c.extra);
    write_file(dir / "bad.yaml", scenario(6, c.graph, c.extra));
    const CliResult r = run_aggsim({"run", (dir / "bad.yaml").string(), "--out", (dir / "out").string()});
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Catch::Contains(c.key) && Catch::Contains(c.words) && Catch::Contains("bad.yaml:"));
    CHECK_FALSE(std::filesystem::exists(dir / "out"));
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("asynchronous averaging with staleness 0 is the synchronous scheme, with staleness it drains",
          "[neighbor_averaging][async]") {
  const std::string yaml = scenario(16, "{kind: torus}", "", 4);
  const GossipRun sync = run_gossip(yaml);
  const GossipRun stale0 = run_gossip(yaml, {"algorithm.asynchronous=true", "algorithm.staleness=0"});
  for (std::size_t s = 0; s < 4; ++s)
    for (std::size_t r = 0; r < 16; ++r)
      CHECK((sync.steps[s].after[r] - stale0.steps[s].after[r]).cwiseAbs().maxCoeff() == 0.0f);
  // Every rank sends its model to its 4 torus neighbours each step, and all of it is received.
  const GossipRun stale2 = run_gossip(yaml, {"algorithm.asynchronous=true", "algorithm.staleness=2"});
  CHECK(stale2.messages == 4u * 16u * 4u);
  CHECK(stale2.steps.size() == 4);
}
