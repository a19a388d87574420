#pragma once
// Shared pieces of the all-reduce tests: the scenario on the formula cluster, the identity-math
// sweep, and the closed-form alpha-beta costs (Thakur, Rabenseifner & Gropp 2005 style) that the
// simulated step times must equal.
//
// Platform: {topology: cluster, hosts: p, bandwidth: 10Gbps, latency: 1us} under network:
// alpha_beta. A message crosses the sender's and the receiver's private links: alpha = 2 us,
// beta = 1.25e9 B/s, so one message of m bytes costs alpha + m/beta when its links are free. Links
// are full duplex: a rank may send one message and receive another at full speed; two messages
// leaving one host at once share its up-link.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <cmath>
#include <string>

#include "support/reduction_check.hpp"

namespace aggsim::test {

constexpr double kAlpha = 2e-6;
constexpr double kBeta = 10e9 / 8;

// `algorithm` is the inside of the YAML algorithm map after the op, e.g. "name: tree_allreduce, chunks: 4".
inline std::string cluster_scenario(const std::string& algorithm, int p, const std::string& op, int proxy_dim,
                                    const std::string& size = "1MB") {
  return fmt::format(R"(
seed: 11
ranks: {p}
steps: 2
platform: {{topology: cluster, hosts: {p}, bandwidth: 10Gbps, latency: 1us}}
network: alpha_beta
model: {{size: {size}, proxy_dim: {dim}}}
algorithm: {{op: {op}, {alg}}}
)", fmt::arg("p", p), fmt::arg("op", op), fmt::arg("dim", proxy_dim), fmt::arg("size", size), fmt::arg("alg", algorithm));
}

// Every op, p in {1, 2, 3, 5, 8, 13, 64}, a proxy size no p divides: every rank must hold the exact
// reduction, bit-identical across ranks.
inline void check_identity_math(const std::string& algorithm) {
  for (const std::string op : {"avg", "sum", "min", "max"}) {
    for (int p : {1, 2, 3, 5, 8, 13, 64}) {
      INFO(algorithm << ", op " << op << ", p " << p);
      const auto e = check_reduction(cluster_scenario(algorithm, p, op, 1001));
      CHECK(e.checked_vectors == 2 * p);
      CHECK(e.max_abs_error <= summation_tolerance(p, e.reference_scale));
      CHECK(e.max_rank_spread == 0.0);
    }
  }
  INFO(algorithm << ", custom_avg");
  const auto e = check_reduction(cluster_scenario(algorithm, 6, "custom_avg", 77), {"algorithm.denominator=3"});
  CHECK(e.max_abs_error <= summation_tolerance(6, e.reference_scale));
  CHECK(e.max_rank_spread == 0.0);
}

// The simulated step time of `algorithm` on p ranks and S bytes (every step), with the math plane
// on and off (timing must not depend on it).
inline void check_step_time(const std::string& algorithm, int p, double bytes, double expected) {
  for (const std::string math : {"on", "off"}) {
    INFO(algorithm << ", p " << p << ", S " << bytes << " B, math " << math << ", expected " << expected << " s");
    const auto times = step_times(cluster_scenario(algorithm, p, "avg", 16, fmt::format("{}B", bytes)),
                                  {"model.math=" + math});
    for (double t : times) CHECK(t == Approx(expected).epsilon(1e-9));
  }
}

// Sizes used by the formula tests: 4 * 384000 and 4 * 24e6 bytes; 384000 = 2^10 * 3 * 5^3 and
// 24e6 = 2^9 * 3 * 5^6, so every chunk below is a whole number of fp32 elements and chunks are equal.
constexpr double kSmall = 1536000.0;
constexpr double kLarge = 96000000.0;

inline int floor_log2(int p) { return static_cast<int>(std::floor(std::log2(p) + 1e-9)); }
inline int ceil_log2(int p) { return static_cast<int>(std::ceil(std::log2(p) - 1e-9)); }
inline bool power_of_two(int p) { return (p & (p - 1)) == 0; }

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

}  // namespace aggsim::test
