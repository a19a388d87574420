#pragma once
// Distributions the workload and compute model draw from, written on top of sim/core/random.hpp
// streams (the standard library's distributions differ between implementations).
#include <cmath>
#include <vector>

#include "sim/core/random.hpp"

namespace aggsim {

// Gamma(shape, 1) by Marsaglia & Tsang (2000); shape < 1 through Gamma(shape + 1) * U^(1/shape).
inline double gamma_sample(Rng& rng, double shape) {
  if (shape < 1.0) {
    double u = uniform01(rng);
    while (u <= 0.0) u = uniform01(rng);
    return gamma_sample(rng, shape + 1.0) * std::pow(u, 1.0 / shape);
  }
  const double d = shape - 1.0 / 3.0, c = 1.0 / std::sqrt(9.0 * d);
  for (;;) {
    double x, v;
    do {
      x = standard_normal(rng);
      v = 1.0 + c * x;
    } while (v <= 0.0);
    v = v * v * v;
    const double u = uniform01(rng);
    if (u < 1.0 - 0.0331 * x * x * x * x) return d * v;
    if (u > 0.0 && std::log(u) < 0.5 * x * x + d * (1.0 - v + std::log(v))) return d * v;
  }
}

// Dirichlet(alpha, ..., alpha) over k outcomes, as normalized Gamma draws.
inline std::vector<double> symmetric_dirichlet(Rng& rng, int k, double alpha) {
  std::vector<double> p(static_cast<std::size_t>(k));
  double total = 0;
  for (auto& x : p) total += (x = gamma_sample(rng, alpha));
  if (total <= 0) {  // every draw underflowed (tiny alpha): all mass on one outcome
    for (auto& x : p) x = 0;
    p[uniform_below(rng, static_cast<std::uint64_t>(k))] = 1;
    return p;
  }
  for (auto& x : p) x /= total;
  return p;
}

// Exponential with the given mean, by inversion.
inline double exponential_sample(Rng& rng, double mean) {
  return -mean * std::log1p(-uniform01(rng));
}

// Index drawn from a discrete distribution (probabilities summing to 1); rounding residue goes to
// the last outcome with positive probability.
inline int categorical_sample(Rng& rng, const std::vector<double>& p) {
  double u = uniform01(rng);
  int last = 0;
  for (std::size_t i = 0; i < p.size(); ++i) {
    if (p[i] <= 0) continue;
    if (u < p[i]) return static_cast<int>(i);
    u -= p[i];
    last = static_cast<int>(i);
  }
  return last;
}

}  // namespace aggsim
