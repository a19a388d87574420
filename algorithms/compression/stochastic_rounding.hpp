#pragma once
// Unbiased stochastic rounding for the quantizers (QSGD, TernGrad): x in [0, L] becomes floor(x)
// or floor(x) + 1 with P(up) = x - floor(x). The uniforms come in blocks from SplitMix64 in
// counter mode, keyed by one draw of the tensor's stream (sim/core/random.hpp): two 24-bit
// uniforms per 64-bit output (exact in float; a 2^-24 grid, at float resolution), cheap enough to
// keep the quantizers near memory bandwidth.
#include <cmath>
#include <cstdint>

#include "sim/core/random.hpp"

#if defined(__GNUC__) && !defined(__clang__)
#define AGGSIM_SCALAR_LOOPS __attribute__((optimize("no-tree-vectorize")))
#else
#define AGGSIM_SCALAR_LOOPS
#endif

namespace aggsim {

class UniformBlocks {
 public:
  static constexpr int kBlock = 256;

  explicit UniformBlocks(Rng& rng) : key_(rng()) {}
  // The next kBlock uniforms in [0, 1).
  const float* next() {
    hash_block();
    for (int i = 0; i < kBlock / 2; ++i) {
      // Through int32: SSE2 converts signed 32-bit integers to float in one instruction, unsigned
      // 64-bit ones only with a fix-up; the 24-bit values are the same either way.
      block_[2 * i] = static_cast<float>(static_cast<std::int32_t>(hashes_[i] >> 40)) * 0x1.0p-24f;
      block_[2 * i + 1] = static_cast<float>(static_cast<std::int32_t>((hashes_[i] >> 8) & 0xffffffULL)) * 0x1.0p-24f;
    }
    return block_;
  }

 private:
  std::uint64_t key_;
  std::uint64_t counter_ = 0;
  float block_[kBlock];
  std::uint64_t hashes_[kBlock / 2];

  // Kept scalar on GCC: without -march its vectorised form emulates each 64-bit multiply with
  // three SSE2 32-bit ones and was slower (QSGD encode on 16 Mi values 2.0 vs 2.4 GB/s). The
  // conversion to floats, in next(), is a separate loop so that it still vectorises.
  AGGSIM_SCALAR_LOOPS void hash_block() {
    for (int i = 0; i < kBlock / 2; ++i) hashes_[i] = splitmix64(key_ + (counter_++) * 0x9e3779b97f4a7c15ULL);
  }
};

}  // namespace aggsim
