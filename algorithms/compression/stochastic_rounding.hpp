#pragma once
// Unbiased stochastic rounding for the quantizers (QSGD, TernGrad): x in [0, L] becomes floor(x)
// or floor(x) + 1 with P(up) = x - floor(x). The uniforms come in blocks from eight interleaved
// xoshiro128+ generators (Blackman & Vigna: the variant meant for floats, whose upper bits are its
// good ones), seeded through SplitMix64 from one draw of the tensor's stream (sim/core/random.hpp).
// Each 32-bit output gives one uniform from its top 24 bits (exact in float; a 2^-24 grid, at float
// resolution). The generators are written with GCC/Clang vector types of four 32-bit lanes: adds,
// shifts and xors that baseline SSE2 runs four at a time (and any other target lane by lane), so
// the quantizers stay near memory bandwidth; integers are exact, so every build gives one stream.
#include <cstdint>

#include "sim/core/random.hpp"

namespace aggsim {

class UniformBlocks {
 public:
  static constexpr int kBlock = 256;

  explicit UniformBlocks(Rng& rng) {
    std::uint64_t key = rng();
    for (int lane = 0; lane < kLanes; ++lane) {
      for (int word = 0; word < 4; word += 2) {
        key = splitmix64(key);
        state_[word][lane / 4][lane % 4] = static_cast<std::uint32_t>(key);
        state_[word + 1][lane / 4][lane % 4] = static_cast<std::uint32_t>(key >> 32);
      }
    }
    // xoshiro's all-zero state is a fixed point; SplitMix64 practically never yields it.
    for (int half = 0; half < 2; ++half)
      for (int lane = 0; lane < 4; ++lane)
        if ((state_[0][half][lane] | state_[1][half][lane] | state_[2][half][lane] | state_[3][half][lane]) ==
            0)
          state_[0][half][lane] = 1;
  }

  // The next kBlock uniforms in [0, 1).
  const float* next() {
    // The state lives in locals (registers) for the block; the two halves interleave.
    U32x4 a0 = state_[0][0], a1 = state_[1][0], a2 = state_[2][0], a3 = state_[3][0];
    U32x4 b0 = state_[0][1], b1 = state_[1][1], b2 = state_[2][1], b3 = state_[3][1];
    for (int round = 0; round < kBlock / kLanes; ++round) {
      const F32x4 ua = step(a0, a1, a2, a3), ub = step(b0, b1, b2, b3);
      __builtin_memcpy(block_ + round * kLanes, &ua, sizeof ua);
      __builtin_memcpy(block_ + round * kLanes + 4, &ub, sizeof ub);
    }
    state_[0][0] = a0, state_[1][0] = a1, state_[2][0] = a2, state_[3][0] = a3;
    state_[0][1] = b0, state_[1][1] = b1, state_[2][1] = b2, state_[3][1] = b3;
    return block_;
  }

 private:
  typedef std::uint32_t U32x4 __attribute__((vector_size(16)));
  typedef std::int32_t I32x4 __attribute__((vector_size(16)));
  typedef float F32x4 __attribute__((vector_size(16)));
  static constexpr int kLanes = 8;

  // One xoshiro128+ step of four generators; returns their uniforms.
  static F32x4 step(U32x4& s0, U32x4& s1, U32x4& s2, U32x4& s3) {
    const U32x4 result = s0 + s3;
    const U32x4 t = s1 << 9;
    s2 ^= s0;
    s3 ^= s1;
    s1 ^= s2;
    s0 ^= s3;
    s2 ^= t;
    s3 = (s3 << 11) | (s3 >> 21);
    // Through int32: SSE2 converts signed 32-bit integers to float in one instruction.
    return __builtin_convertvector(reinterpret_cast<I32x4>(result >> 8), F32x4) * 0x1.0p-24f;
  }

  U32x4 state_[4][2];  // word, half of the eight generators
  alignas(16) float block_[kBlock];
};

}  // namespace aggsim
