#pragma once
// Shared pieces of the all-reduce tests: the scenario on the formula cluster, the identity-math
// sweep, and the closed-form alpha-beta costs (Thakur, Rabenseifner & Gropp 2005 style) that the
// simulated step times must equal.
//
// Platform: {topology: cluster, hosts: p, bandwidth: 10Gbps, latency: 1us} under network:
// alpha_beta, with free reductions (compute.reduce_speed: 0; test_reduction_cost.cpp adds gamma). A message
// crosses the sender's and the receiver's private links: alpha = 2 us, beta = 1.25e9 B/s, so one message of m
// bytes costs alpha + m/beta when its links are free. Links are full duplex: a rank may send one message and
// receive another at full speed; two messages leaving one host at once share its up-link.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <catch2/catch.hpp>
#include <cmath>
#include <string>
#include <vector>

#include "sim/workload/compute_model.hpp"
#include "support/cli.hpp"
#include "support/reduction_check.hpp"

namespace aggsim::test {

constexpr double kAlpha = 2e-6;
constexpr double kBeta = 10e9 / 8;

// The scenario on the formula cluster of p hosts, two steps. `algorithm` is the inside of the YAML
// algorithm map after the op, e.g. "name: tree_allreduce, chunks: 4"; `model` the YAML model map.
inline std::string cluster_scenario_with_model(const std::string& algorithm, int p, const std::string& op,
                                               const std::string& model) {
  return fmt::format(R"(
seed: 11
ranks: {p}
steps: 2
platform: {{topology: cluster, hosts: {p}, bandwidth: 10Gbps, latency: 1us}}
network: alpha_beta
model: {model}
algorithm: {{op: {op}, {alg}}}
compute: {{reduce_speed: 0}}
)",
                     fmt::arg("p", p), fmt::arg("op", op), fmt::arg("model", model),
                     fmt::arg("alg", algorithm));
}

// A flat model of `size` with a proxy of `proxy_dim` elements.
inline std::string cluster_scenario(const std::string& algorithm, int p, const std::string& op, int proxy_dim,
                                    const std::string& size = "1MB") {
  return cluster_scenario_with_model(algorithm, p, op,
                                     fmt::format("{{size: {}, proxy_dim: {}}}", size, proxy_dim));
}

// The ranks and ops of the identity-math sweep: non-powers of two included; custom_avg with a
// denominator that is no rank count.
inline const std::vector<int> kIdentityRanks = {1, 2, 3, 5, 8, 13, 64};
inline const std::vector<std::string> kIdentityOps = {"avg", "sum", "min", "max",
                                                      "custom_avg, denominator: 2.5"};

// Six layers of unequal sizes (forward order): 300, 4000, 700, 900, 50 and 2500 parameters, 8450 in
// all. With `bucket: 8000B` (2000 floats) buckets close in reverse order once they reach 2000
// floats: {l5} alone, {l4, l3, l2, l1} fused, then {l0}, the remainder. The 1001 proxy elements
// split by wire share: 296, 669 and 36, so the last bucket has fewer elements than 64 ranks.
inline const std::string& layered_model_table() {
  static const std::string path = [] {
    const auto file = fresh_dir("layers") / "unequal.yaml";
    write_file(file, R"(name: unequal
layers:
  - {name: l0, shape: [12, 25], forward_flops: 0}
  - {name: l1, shape: [40, 100], forward_flops: 0}
  - {name: l2, shape: [28, 25], forward_flops: 0}
  - {name: l3, shape: [30, 30], forward_flops: 0}
  - {name: l4, shape: [50], forward_flops: 0}
  - {name: l5, shape: [50, 50], forward_flops: 0}
)");
    return file.string();
  }();
  return path;
}

// How the gradient is aggregated: one flat collective over a 1 MB model, or one per bucket of the
// layered model above (per-layer and fused buckets, in order).
enum class Scope { model, layer };

inline const char* scope_name(Scope s) {
  return s == Scope::model ? "by model" : "by layer";
}

// The scenario's `model` map (a proxy of 1001 elements) and the algorithm keys choosing the scope.
inline std::string scope_model(Scope scope) {
  return scope == Scope::model ? "{size: 1MB, proxy_dim: 1001}"
                               : fmt::format("{{layers: {}, proxy_dim: 1001}}", layered_model_table());
}

inline std::string scope_grouping(Scope scope) {
  return scope == Scope::model ? "granularity: model" : "granularity: layer, bucket: 8000B";
}

// The identity sweep's scenario: `algorithm` and `op` as in cluster_scenario, in the given scope.
inline std::string identity_scenario(const std::string& algorithm, int p, const std::string& op,
                                     Scope scope) {
  return cluster_scenario_with_model(scope_grouping(scope) + ", " + algorithm, p, op, scope_model(scope));
}

// The by-layer scope really aggregates one lone layer, one fused bucket and a bucket smaller than
// the largest p, in that order (so a change of the bucketing cannot quietly turn it into one flat
// collective).
// `p` only has to be a rank count the algorithm's options accept (the plan does not depend on it).
inline void check_layered_buckets(const std::string& algorithm, int p = 2) {
  const Scenario sc = load_scenario_text(identity_scenario(algorithm, p, "avg", Scope::layer), "test.yaml");
  const StepPlan plan =
      make_step_plan(sc.model.layers, Bucketing::by_size, sc.algorithm.bucket_bytes, {}, sc.model.proxy_dim);
  REQUIRE(plan.buckets.size() == 3);
  const std::array<std::array<std::int64_t, 3>, 3> expected = {{{5, 5, 296}, {1, 4, 669}, {0, 0, 36}}};
  for (std::size_t b = 0; b < 3; ++b) {
    CHECK(plan.buckets[b].first_layer == expected[b][0]);
    CHECK(plan.buckets[b].last_layer == expected[b][1]);
    CHECK(plan.buckets[b].proxy.count == expected[b][2]);
  }
}

// Every op, every p, by model and by layer: every rank must hold the exact reduction of all ranks'
// inputs (element-wise, so the per-bucket reductions together are the whole vector's), bit-identical
// across ranks.
inline void check_identity_math(const std::string& algorithm, const std::vector<int>& ranks = kIdentityRanks,
                                const std::vector<std::string>& ops = kIdentityOps) {
  check_layered_buckets(algorithm, ranks.front());
  for (Scope scope : {Scope::model, Scope::layer})
    for (const std::string& op : ops)
      for (int p : ranks) {
        INFO(algorithm << ", " << scope_name(scope) << ", op " << op << ", p " << p);
        const auto e = check_reduction(identity_scenario(algorithm, p, op, scope));
        CHECK(e.checked_vectors == 2 * p);
        CHECK(e.max_abs_error <= summation_tolerance(p, e.reference_scale));
        CHECK(e.max_rank_spread == 0.0);
      }
}

// The simulated step time of `algorithm` on p ranks and S bytes (every step), with the math plane
// on and off (timing must not depend on it).
inline void check_step_time(const std::string& algorithm, int p, double bytes, double expected) {
  for (const std::string math : {"on", "off"}) {
    INFO(algorithm << ", p " << p << ", S " << bytes << " B, math " << math << ", expected " << expected
                   << " s");
    const auto times = step_times(cluster_scenario(algorithm, p, "avg", 16, fmt::format("{}B", bytes)),
                                  {"model.math=" + math});
    for (double t : times) CHECK(t == Approx(expected).epsilon(1e-9));
  }
}

// Sizes used by the formula tests: 4 * 384000 and 4 * 24e6 bytes; 384000 = 2^10 * 3 * 5^3 and
// 24e6 = 2^9 * 3 * 5^6, so every chunk below is a whole number of fp32 elements and chunks are equal.
constexpr double kSmall = 1536000.0;
constexpr double kLarge = 96000000.0;

inline int floor_log2(int p) {
  return static_cast<int>(std::floor(std::log2(p) + 1e-9));
}
inline int ceil_log2(int p) {
  return static_cast<int>(std::ceil(std::log2(p) - 1e-9));
}
inline bool power_of_two(int p) {
  return (p & (p - 1)) == 0;
}

// Ring: reduce-scatter and all-gather, p-1 steps each, every rank sends S/p to its right neighbour
// and receives S/p from its left at once (full duplex): 2(p-1)(alpha + S/(p beta)).
inline double ring_cost(int p, double S, double a = kAlpha, double b = kBeta) {
  return 2.0 * (p - 1) * (a + S / p / b);
}

// Non-power-of-two fold: the r = p - p' extra ranks send S to a partner (one step, alpha + S/beta,
// all in parallel) and receive the result from it at the end (another step).
inline double fold_cost(int p, double S, double a = kAlpha, double b = kBeta) {
  return power_of_two(p) ? 0.0 : 2.0 * (a + S / b);
}

// Rabenseifner on p' = 2^k: halving step j sends S/2^(j+1) (j = 0..k-1), sum S(p'-1)/p'; the
// doubling all-gather mirrors it: 2k alpha + 2 (p'-1)/p' S/beta. Plus the fold.
inline double halving_doubling_cost(int p, double S, double a = kAlpha, double b = kBeta) {
  const int k = floor_log2(p), q = 1 << k;
  return 2.0 * k * a + 2.0 * (q - 1) / q * S / b + fold_cost(p, S, a, b);
}

// Recursive doubling on p' = 2^k: k exchanges of the whole vector, k (alpha + S/beta). Plus the fold.
inline double recursive_doubling_cost(int p, double S, double a = kAlpha, double b = kBeta) {
  return floor_log2(p) * (a + S / b) + fold_cost(p, S, a, b);
}

// Binomial reduce + broadcast with C pieces: rank 0 has L = ceil(log2 p) children and does one
// blocking transfer of S/C bytes at a time; every subtree of height h delivers piece c exactly when
// rank 0 asks for it (its own L-period pattern fits in the root's), so the reduce takes C L
// transfers; the broadcast is the mirror image (largest subtree first): C L transfers.
//   2 C L (alpha + S/(C beta)) = 2 L (C alpha + S/beta).
inline double tree_cost(int p, double S, int chunks, double a = kAlpha, double b = kBeta) {
  return 2.0 * ceil_log2(p) * (chunks * a + S / b);
}

// 2D torus, ring per dimension, rows x cols = p: row reduce-scatter (cols-1 steps of S/cols), column
// ring all-reduce of the S/cols shard (2(rows-1) steps of S/p), row all-gather (cols-1 steps of S/cols).
inline double torus2d_cost(int rows, int cols, double S, double a = kAlpha, double b = kBeta) {
  return 2.0 * (cols - 1) * (a + S / cols / b) + ring_cost(rows, S / cols, a, b);
}

// Double binary tree schedule model (see test_double_binary_tree_allreduce.cpp for the definition
// it follows and the closed forms it yields).
struct DbtModelTree {
  std::vector<int> parent, height, depth;
  std::vector<std::vector<int>> kids;
};

inline DbtModelTree dbt_model_tree(int p, int shift) {
  auto rank_at = [p, shift](int x) { return ((x - 1 - shift) % p + p) % p; };
  DbtModelTree t{std::vector<int>(p, -1), std::vector<int>(p, 0), std::vector<int>(p, 0),
                 std::vector<std::vector<int>>(p)};
  for (int x = 1; x <= p; ++x) {
    const int low = x & -x;
    if (low == 1) continue;
    std::vector<int> children = {x - low / 2};
    for (int d = low / 2; d >= 1; d /= 2)
      if (x + d <= p) {
        children.push_back(x + d);
        break;
      }
    for (int c : children) {
      t.parent[rank_at(c)] = rank_at(x);
      t.kids[rank_at(x)].push_back(rank_at(c));
    }
  }
  for (int v = 0; v < p; ++v)
    for (int u = v; t.parent[u] >= 0; u = t.parent[u]) ++t.depth[v];
  for (int v = 0; v < p; ++v)
    for (int u = v, h = 0; t.parent[u] >= 0; u = t.parent[u])
      t.height[t.parent[u]] = std::max(t.height[t.parent[u]], ++h);
  return t;
}

// Transfers on the critical chain of each of `steps` consecutive steps of the two-tree schedule on
// p ranks with C pieces per half: step s ends when the last rank finishes it (in transfers from the
// start), and a rank starts step s+1 as soon as it has finished step s (no barrier between steps).
inline std::vector<int> double_binary_tree_transfers(int p, int C, int steps) {
  const std::array<DbtModelTree, 2> tree = {dbt_model_tree(p, 0), dbt_model_tree(p, 1)};
  std::array<std::vector<int>, 2> colour = {std::vector<int>(p, -1), std::vector<int>(p, -1)};
  for (int t0 = 0; t0 < 2; ++t0)
    for (int v0 = 0; v0 < p; ++v0) {
      std::vector<std::array<int, 3>> todo = {{t0, v0, 0}};
      while (!todo.empty()) {
        const auto [t, v, c] = todo.back();
        todo.pop_back();
        if (tree[t].parent[v] < 0 || colour[t][v] >= 0) continue;
        colour[t][v] = c;
        for (int s : tree[t].kids[tree[t].parent[v]])
          if (s != v) todo.push_back({t, s, 1 - c});
        todo.push_back({1 - t, v, 1 - c});
      }
    }
  int H = 0, D = 0;
  for (const auto& t : tree)
    for (int v = 0; v < p; ++v) H = std::max(H, t.height[v]), D = std::max(D, t.depth[v]);
  std::vector<int> done(p, 0);  // transfers on the longest chain ending at each rank's last round
  auto run = [&](int periods, bool reduce) {
    for (int k = 0; k < periods; ++k)
      for (int round = 0; round < 2; ++round) {
        std::vector<int> next = done;
        for (int t = 0; t < 2; ++t)
          for (int v = 0; v < p; ++v) {
            const int up = tree[t].parent[v],
                      piece = reduce ? k - tree[t].height[v] : k - tree[t].depth[v] + 1;
            if (up < 0 || colour[t][v] != round || piece < 0 || piece >= C) continue;
            const int end = std::max(done[v], done[up]) + 1;
            next[v] = std::max(next[v], end);
            next[up] = std::max(next[up], end);
          }
        done = next;
      }
  };
  std::vector<int> per_step;
  for (int s = 0, previous_end = 0; s < steps; ++s) {
    run(C + H - 1, true);
    run(C + D - 1, false);
    const int end = *std::max_element(done.begin(), done.end());
    per_step.push_back(end - previous_end);
    previous_end = end;
  }
  return per_step;
}

inline int double_binary_tree_transfers(int p, int C) {
  return double_binary_tree_transfers(p, C, 1)[0];
}

}  // namespace aggsim::test
