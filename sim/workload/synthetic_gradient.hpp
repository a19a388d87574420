#pragma once
// The gradient a rank contributes when the scenario has no training workload: standard normal
// numbers, different for every rank and step. One 64-bit counter hash (splitmix64) per pair of
// values and a single-precision Box-Muller using both outputs: a tenth of the work of
// mt19937_64 with double-precision Box-Muller, which dominated aggsim's own cost per message with
// math on. Deterministic for a given build: same seed, rank and step, same bits.
#include <Eigen/Core>
#include <cmath>
#include <cstdint>

#include "sim/core/random.hpp"

namespace aggsim {

inline Eigen::VectorXf synthetic_gradient(std::uint64_t seed, int rank, int step, std::int64_t dim) {
  const std::uint64_t stream =
      derive_seed(seed, Stream::gradient, static_cast<std::uint64_t>(rank), static_cast<std::uint64_t>(step));
  Eigen::VectorXf g(dim);
  constexpr float kTwoPi = 6.2831853071795865f;
  constexpr float kUnit24 = 0x1.0p-24f;  // 24 random bits fill a float's mantissa
  for (std::int64_t i = 0; i < dim; i += 2) {
    const std::uint64_t bits = splitmix64(stream + static_cast<std::uint64_t>(i));
    const float u1 = static_cast<float>((bits >> 40) + 1) * kUnit24;  // (0, 1]: log stays finite
    const float u2 = static_cast<float>((bits >> 8) & 0xFFFFFF) * kUnit24;
    const float radius = std::sqrt(-2.0f * std::log(u1));
    g[i] = radius * std::cos(kTwoPi * u2);
    if (i + 1 < dim) g[i + 1] = radius * std::sin(kTwoPi * u2);
  }
  return g;
}

}  // namespace aggsim
