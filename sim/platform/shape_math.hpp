#pragma once
// Small integer helpers the generators use to derive default shapes from a node count.
#include <cstdint>
#include <vector>

namespace aggsim {

// Smallest r >= 1 with r^k >= n.
inline std::int64_t ceil_root(std::int64_t n, int k) {
  std::int64_t r = 1;
  auto power_reaches = [&](std::int64_t x) {
    std::int64_t p = 1;
    for (int i = 0; i < k; ++i) {
      p *= x;
      if (p >= n) return true;
    }
    return p >= n;
  };
  while (!power_reaches(r)) ++r;
  return r;
}

// Product of the entries, saturating at `cap` (shapes are checked against a host limit anyway).
inline std::int64_t capped_product(const std::vector<std::int64_t>& values, std::int64_t cap) {
  std::int64_t p = 1;
  for (auto v : values) {
    if (v > 0 && p > cap / v) return cap + 1;
    p *= v;
  }
  return p;
}

template <class T>
std::vector<T> convert_all(const std::vector<std::int64_t>& values) {
  return std::vector<T>(values.begin(), values.end());
}

}  // namespace aggsim
