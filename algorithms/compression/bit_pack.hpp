#pragma once
// Fixed-width bit packing of small unsigned codes (QSGD levels, TernGrad trits), least significant
// bit first, so the payload holds exactly ceil(n * bits / 8) bytes. Codes are at most 25 bits.
// Words are moved with memcpy, so the byte order of the format is the host's: little-endian only.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "bit packing assumes a little-endian host");

namespace aggsim {

inline std::uint64_t packed_bytes(std::uint64_t count, unsigned bits) {
  return (count * bits + 7) / 8;
}

class BitWriter {
 public:
  BitWriter(std::vector<std::uint8_t>& out, std::uint64_t count, unsigned bits) : out_(out) {
    out_.assign(packed_bytes(count, bits), 0);
  }
  void put(std::uint32_t code, unsigned bits) {
    acc_ |= static_cast<std::uint64_t>(code) << filled_;
    filled_ += bits;
    ++count_;
    if (filled_ >= 32) {
      const auto word = static_cast<std::uint32_t>(acc_);
      std::memcpy(out_.data() + pos_, &word, 4);
      pos_ += 4;
      acc_ >>= 32;
      filled_ -= 32;
    }
  }
  // Many codes of one width. For widths up to 8, eight codes fill exactly `bits` whole bytes, so
  // groups of eight starting at a multiple of eight are assembled independently (no serial chain
  // through the accumulator) and stored with one 8-byte write.
  void put(const std::uint32_t* codes, std::size_t count, unsigned bits) {
    std::size_t i = 0;
    for (; i < count && count_ % 8 != 0; ++i) put(codes[i], bits);
    if (bits <= 8 && count_ % 8 == 0) {
      for (; filled_ > 0; filled_ -= 8, acc_ >>= 8) out_[pos_++] = static_cast<std::uint8_t>(acc_);
      acc_ = 0;
      // Groups whose 8-byte store stays inside the buffer.
      std::size_t groups =
          pos_ + 8 <= out_.size() ? std::min((count - i) / 8, (out_.size() - pos_ - 8) / bits + 1) : 0;
      // Four codes fit 32 bits: first join codes in fours (a vectorisable loop), then quads in pairs.
      constexpr std::size_t kChunk = 64;
      std::uint32_t quads[2 * kChunk];
      for (std::size_t g0 = 0; g0 < groups; g0 += kChunk) {
        const std::size_t n = std::min(kChunk, groups - g0);
        const std::uint32_t* c = codes + i + 8 * g0;
        for (std::size_t q = 0; q < 2 * n; ++q)
          quads[q] =
              c[4 * q] | c[4 * q + 1] << bits | c[4 * q + 2] << (2 * bits) | c[4 * q + 3] << (3 * bits);
        for (std::size_t g = 0; g < n; ++g, pos_ += bits) {
          const std::uint64_t group = quads[2 * g] | static_cast<std::uint64_t>(quads[2 * g + 1])
                                                         << (4 * bits);
          std::memcpy(out_.data() + pos_, &group, 8);  // the bytes past `bits` are rewritten later
        }
      }
      i += 8 * groups;
      count_ += 8 * groups;
    }
    for (; i < count; ++i) put(codes[i], bits);
  }
  void flush() {
    for (; filled_ > 0; filled_ = filled_ > 8 ? filled_ - 8 : 0, acc_ >>= 8)
      out_[pos_++] = static_cast<std::uint8_t>(acc_);
  }

 private:
  std::vector<std::uint8_t>& out_;
  std::uint64_t acc_ = 0;
  unsigned filled_ = 0;
  std::size_t pos_ = 0;
  std::uint64_t count_ = 0;  // codes written
};

class BitReader {
 public:
  explicit BitReader(const std::vector<std::uint8_t>& in) : in_(in) {}
  std::uint32_t get(unsigned bits) {
    if (filled_ < bits) {  // refill 32 bits (fewer at the end)
      std::uint32_t word = 0;
      if (pos_ + 4 <= in_.size())
        std::memcpy(&word, in_.data() + pos_, 4);
      else
        for (std::size_t i = pos_; i < in_.size(); ++i)
          word |= static_cast<std::uint32_t>(in_[i]) << (8 * (i - pos_));
      acc_ |= static_cast<std::uint64_t>(word) << filled_;
      pos_ += 4;
      filled_ += 32;
    }
    const auto code = static_cast<std::uint32_t>(acc_ & ((std::uint64_t{1} << bits) - 1));
    acc_ >>= bits;
    filled_ -= bits;
    return code;
  }
  // Many codes of one width, the reverse of BitWriter::put(codes, count, bits): whole groups of
  // eight codes (`bits` bytes) are read with one 8-byte load each while the position is on a byte.
  void get(std::uint32_t* codes, std::size_t count, unsigned bits) {
    std::size_t i = 0;
    const std::size_t bit_pos = 8 * pos_ - filled_;
    if (bits <= 8 && bit_pos % 8 == 0) {
      std::size_t byte = bit_pos / 8;
      const std::uint64_t mask = (std::uint64_t{1} << bits) - 1;
      for (; i + 8 <= count && byte + 8 <= in_.size(); i += 8, byte += bits) {
        std::uint64_t group;
        std::memcpy(&group, in_.data() + byte, 8);
        for (unsigned j = 0; j < 8; ++j)
          codes[i + j] = static_cast<std::uint32_t>((group >> (j * bits)) & mask);
      }
      pos_ = byte;
      acc_ = 0;
      filled_ = 0;
    }
    for (; i < count; ++i) codes[i] = get(bits);
  }

 private:
  const std::vector<std::uint8_t>& in_;
  std::uint64_t acc_ = 0;
  unsigned filled_ = 0;
  std::size_t pos_ = 0;
};

}  // namespace aggsim
