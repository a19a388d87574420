#pragma once
// Balanced split of n items into `parts` contiguous chunks (the first n % parts chunks get one more).
// Used on both planes at once: the proxy vector (math) and the modeled elements (wire bytes).
#include <cstdint>

namespace aggsim {

struct Range {
  std::int64_t begin = 0;
  std::int64_t count = 0;
};

inline Range chunk_range(std::int64_t n, std::int64_t parts, std::int64_t i) {
  const std::int64_t base = n / parts, extra = n % parts;
  return {i * base + (i < extra ? i : extra), base + (i < extra ? 1 : 0)};
}

}  // namespace aggsim
