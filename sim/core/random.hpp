#pragma once
// Reproducible randomness. Every consumer gets its own stream, derived from the scenario seed and
// a purpose/rank/step tuple, so adding a random draw in one place never shifts another's numbers.
// Distributions are written here because the standard library's differ between implementations.
#include <cmath>
#include <cstdint>
#include <random>

namespace aggsim {

using Rng = std::mt19937_64;

// Streams by purpose; append new purposes at the end so existing streams keep their seeds.
enum class Stream : std::uint64_t { gradient = 1, compression = 2, workload = 3, compute = 4, topology = 5 };

inline std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

inline std::uint64_t derive_seed(std::uint64_t seed, Stream purpose, std::uint64_t a = 0,
                                 std::uint64_t b = 0) {
  std::uint64_t h = splitmix64(seed);
  h = splitmix64(h ^ static_cast<std::uint64_t>(purpose));
  h = splitmix64(h ^ a);
  return splitmix64(h ^ b);
}

inline Rng make_rng(std::uint64_t seed, Stream purpose, std::uint64_t a = 0, std::uint64_t b = 0) {
  return Rng(derive_seed(seed, purpose, a, b));
}

// Uniform in [0, 1) with 53 random bits.
inline double uniform01(Rng& rng) {
  return static_cast<double>(rng() >> 11) * 0x1.0p-53;
}

// Uniform integer in [0, n) without modulo bias (Lemire's method would also do; rejection is simpler).
inline std::uint64_t uniform_below(Rng& rng, std::uint64_t n) {
  const std::uint64_t limit = ~std::uint64_t{0} - (~std::uint64_t{0} % n);
  std::uint64_t x;
  do x = rng();
  while (x >= limit);
  return x % n;
}

// Standard normal by Box-Muller (one value per call, the second discarded for simplicity).
inline double standard_normal(Rng& rng) {
  double u1 = uniform01(rng);
  while (u1 <= 0.0) u1 = uniform01(rng);
  const double u2 = uniform01(rng);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

}  // namespace aggsim
