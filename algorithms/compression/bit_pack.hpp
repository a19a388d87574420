#pragma once
// Fixed-width bit packing of small unsigned codes (QSGD levels, TernGrad trits, sign bits), least
// significant bit first, so the payload holds exactly ceil(n * bits / 8) bytes.
#include <cstdint>
#include <vector>

namespace aggsim {

inline std::uint64_t packed_bytes(std::uint64_t count, unsigned bits) { return (count * bits + 7) / 8; }

class BitWriter {
 public:
  BitWriter(std::vector<std::uint8_t>& out, std::uint64_t count, unsigned bits) : out_(out) {
    out_.assign(packed_bytes(count, bits), 0);
  }
  void put(std::uint32_t code, unsigned bits) {
    acc_ |= static_cast<std::uint64_t>(code) << filled_;
    filled_ += bits;
    while (filled_ >= 8) {
      out_[pos_++] = static_cast<std::uint8_t>(acc_);
      acc_ >>= 8;
      filled_ -= 8;
    }
  }
  void flush() {
    if (filled_ > 0) out_[pos_++] = static_cast<std::uint8_t>(acc_);
    acc_ = 0;
    filled_ = 0;
  }

 private:
  std::vector<std::uint8_t>& out_;
  std::uint64_t acc_ = 0;
  unsigned filled_ = 0;
  std::size_t pos_ = 0;
};

class BitReader {
 public:
  explicit BitReader(const std::vector<std::uint8_t>& in) : in_(in) {}
  std::uint32_t get(unsigned bits) {
    while (filled_ < bits) {
      acc_ |= static_cast<std::uint64_t>(pos_ < in_.size() ? in_[pos_] : 0) << filled_;
      ++pos_;
      filled_ += 8;
    }
    const auto code = static_cast<std::uint32_t>(acc_ & ((std::uint64_t{1} << bits) - 1));
    acc_ >>= bits;
    filled_ -= bits;
    return code;
  }

 private:
  const std::vector<std::uint8_t>& in_;
  std::uint64_t acc_ = 0;
  unsigned filled_ = 0;
  std::size_t pos_ = 0;
};

}  // namespace aggsim
