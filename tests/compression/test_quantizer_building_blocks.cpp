// The quantizers' building blocks against independent references: the block uniform generator
// against a plain scalar xoshiro128+ written from the published algorithm, its outputs' range and
// moments, and fixed-width bit packing round trips through the batched and single-code paths.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <vector>

#include "algorithms/compression/bit_pack.hpp"
#include "algorithms/compression/stochastic_rounding.hpp"

using namespace aggsim;

namespace {

// xoshiro128+ (Blackman & Vigna, xoshiro128plus.c), one generator, scalar.
struct ScalarXoshiro128Plus {
  std::uint32_t s[4];
  std::uint32_t next() {
    const std::uint32_t result = s[0] + s[3];
    const std::uint32_t t = s[1] << 9;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = (s[3] << 11) | (s[3] >> 21);
    return result;
  }
};

}  // namespace

TEST_CASE("block uniforms are eight interleaved xoshiro128+ streams seeded by SplitMix64",
          "[compression][uniforms]") {
  Rng rng(2024), same(2024);
  UniformBlocks blocks(rng);
  // The documented seeding: one draw of the stream, then SplitMix64 chained, two words per call.
  std::uint64_t key = same();
  ScalarXoshiro128Plus reference[8];
  for (auto& g : reference)
    for (int word = 0; word < 4; word += 2) {
      key = splitmix64(key);
      g.s[word] = static_cast<std::uint32_t>(key);
      g.s[word + 1] = static_cast<std::uint32_t>(key >> 32);
    }
  for (int block = 0; block < 3; ++block) {
    const float* u = blocks.next();
    for (int i = 0; i < UniformBlocks::kBlock; ++i) {
      const float expected = static_cast<float>(reference[i % 8].next() >> 8) / 16777216.0f;
      INFO("block " << block << ", value " << i);
      REQUIRE(u[i] == expected);
    }
  }
}

TEST_CASE("block uniforms lie in 0 <= u < 1 with the mean and variance of a standard uniform",
          "[compression][uniforms]") {
  Rng rng(7);
  UniformBlocks blocks(rng);
  const int n_blocks = 4096;  // about 10^6 values
  double sum = 0, sum_sq = 0;
  float lo = 1, hi = 0;
  for (int b = 0; b < n_blocks; ++b) {
    const float* u = blocks.next();
    for (int i = 0; i < UniformBlocks::kBlock; ++i) {
      sum += u[i];
      sum_sq += static_cast<double>(u[i]) * u[i];
      lo = std::min(lo, u[i]);
      hi = std::max(hi, u[i]);
    }
  }
  const double n = static_cast<double>(n_blocks) * UniformBlocks::kBlock;
  const double mean = sum / n, var = sum_sq / n - mean * mean;
  CHECK(lo >= 0.0f);
  CHECK(hi < 1.0f);
  CHECK(std::abs(mean - 0.5) < 5 * std::sqrt(1.0 / 12 / n));
  CHECK(std::abs(var - 1.0 / 12) <
        5 * std::sqrt(1.0 / 180 / n));  // SE of a variance: sqrt((mu4 - sigma^4)/n)
}

TEST_CASE("bit packing round-trips every width through batched and single-code paths",
          "[compression][bitpack]") {
  Rng rng(11);
  for (unsigned bits = 1; bits <= 25; ++bits) {
    for (std::size_t count : {std::size_t{0}, std::size_t{1}, std::size_t{7}, std::size_t{8}, std::size_t{9},
                              std::size_t{63}, std::size_t{1000}, std::size_t{4099}}) {
      std::vector<std::uint32_t> codes(count);
      for (auto& c : codes) c = static_cast<std::uint32_t>(rng() & ((std::uint64_t{1} << bits) - 1));
      std::vector<std::uint8_t> packed;
      BitWriter writer(packed, count, bits);
      // Mixed: a few single codes (leaving the position off a byte), a batch, singles, a batch.
      std::size_t i = 0;
      for (; i < std::min<std::size_t>(3, count); ++i) writer.put(codes[i], bits);
      std::size_t batch = std::min<std::size_t>(count - i, 500);
      writer.put(codes.data() + i, batch, bits);
      i += batch;
      for (const std::size_t end = std::min(i + 5, count); i < end; ++i) writer.put(codes[i], bits);
      writer.put(codes.data() + i, count - i, bits);
      writer.flush();
      INFO("bits " << bits << ", count " << count);
      REQUIRE(packed.size() == packed_bytes(count, bits));

      // Read back with a different split: batches of 256 after 8 singles (byte-aligned) or 5.
      for (std::size_t singles : {std::size_t{8}, std::size_t{5}}) {
        BitReader reader(packed);
        std::vector<std::uint32_t> back(count);
        std::size_t j = 0;
        for (; j < std::min(singles, count); ++j) back[j] = reader.get(bits);
        while (j < count) {
          const std::size_t m = std::min<std::size_t>(256, count - j);
          reader.get(back.data() + j, m, bits);
          j += m;
        }
        CHECK(back == codes);
      }
    }
  }
}
