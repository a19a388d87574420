#pragma once
// The gradient a rank contributes when the scenario has no training workload: standard normal
// numbers from the rank's own stream, different every step.
#include <Eigen/Core>
#include <cstdint>

#include "sim/core/random.hpp"

namespace aggsim {

inline Eigen::VectorXf synthetic_gradient(std::uint64_t seed, int rank, int step, std::int64_t dim) {
  Rng rng =
      make_rng(seed, Stream::gradient, static_cast<std::uint64_t>(rank), static_cast<std::uint64_t>(step));
  Eigen::VectorXf g(dim);
  for (std::int64_t i = 0; i < dim; ++i) g[i] = static_cast<float>(standard_normal(rng));
  return g;
}

}  // namespace aggsim
