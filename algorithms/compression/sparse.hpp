#pragma once
// Shared pieces of the sparsifiers (top-k, random-k, threshold): how many values to keep on each
// plane, and the index + value encoding.
#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "algorithms/compression/compressor.hpp"
#include "sim/core/params.hpp"

namespace aggsim {

// `k` values kept out of n, given either a ratio or an absolute k (of the modeled tensor).
struct SparsityBudget {
  double ratio = 0.01;
  std::int64_t k = 0;  // 0: use ratio

  static std::vector<ParamSpec> specs() {
    return {ParamSpec("ratio", ParamKind::real, "0.01", "fraction of values kept").between(1e-9, 1),
            ParamSpec("k", ParamKind::integer, "0",
                      "values kept per modeled layer tensor (overrides ratio when > 0)")
                .at_least(0)};
  }
  static SparsityBudget from(const Params& p) { return {p.real("ratio"), p.integer("k")}; }

  // Kept values of one modeled piece.
  std::int64_t on_wire(std::int64_t n) const {
    return clamp_count(k > 0 ? static_cast<double>(k) : ratio * n, n);
  }
  // Kept values of the proxy: the fraction kept over the modeled pieces (equal to on_wire when the
  // proxy is the one modeled piece).
  std::int64_t on_proxy(std::int64_t proxy_n, const WireLayout& wire) const {
    std::int64_t kept = 0;
    for (const WirePiece& piece : wire.pieces) kept += on_wire(piece.shape.size());
    const std::int64_t wire_n = wire.size();
    if (wire_n == 0) return clamp_count(ratio * proxy_n, proxy_n);
    return clamp_count(static_cast<double>(kept) * static_cast<double>(proxy_n) / static_cast<double>(wire_n),
                       proxy_n);
  }

 private:
  static std::int64_t clamp_count(double x, std::int64_t n) {
    return std::clamp<std::int64_t>(std::llround(x), std::min<std::int64_t>(1, n), n);
  }
};

// Dense vector of `n` zeros with payload.values * scale at payload.indices.
inline Eigen::VectorXf scatter(const std::vector<std::uint32_t>& indices, const Eigen::VectorXf& values,
                               Eigen::Index n, float scale = 1.0f) {
  Eigen::VectorXf out = Eigen::VectorXf::Zero(n);
  for (std::size_t i = 0; i < indices.size(); ++i)
    out[indices[i]] = values[static_cast<Eigen::Index>(i)] * scale;
  return out;
}

// Index (4 bytes) + fp32 value per kept entry.
constexpr std::uint64_t kSparseEntryBytes = 8;

}  // namespace aggsim
