#pragma once
// Unbiased stochastic rounding for the quantizers (QSGD, TernGrad): x in [0, L] becomes floor(x)
// or floor(x) + 1 with P(up) = x - floor(x). Each 64-bit draw yields two 32-bit uniforms (the
// bias of a 2^-32 grid is far below float resolution), halving the generator's cost.
#include <cmath>
#include <cstdint>

#include "sim/core/random.hpp"

namespace aggsim {

class Uniform32Stream {
 public:
  explicit Uniform32Stream(Rng& rng) : rng_(rng) {}
  // Uniform in [0, 1) on a 2^-32 grid.
  float next() {
    if (!have_) {
      word_ = rng_();
      have_ = true;
      return static_cast<float>(static_cast<double>(word_ >> 32) * 0x1.0p-32);
    }
    have_ = false;
    return static_cast<float>(static_cast<double>(word_ & 0xffffffffULL) * 0x1.0p-32);
  }
  // floor(x) or floor(x) + 1, unbiased.
  std::uint32_t round(float x) {
    const float low = std::floor(x);
    return static_cast<std::uint32_t>(low) + (next() < x - low ? 1u : 0u);
  }

 private:
  Rng& rng_;
  std::uint64_t word_ = 0;
  bool have_ = false;
};

}  // namespace aggsim
