#pragma once
// A gradient compressor: real encoding of real numbers, plus the exact size of that encoding.
// Compressors never communicate; aggregators decide how payloads travel (GRACE's split).
#include <Eigen/Core>
#include <cstdint>

#include "sim/comm/payload.hpp"
#include "sim/core/random.hpp"

namespace aggsim {

class Compressor {
 public:
  virtual ~Compressor() = default;
  // Encodes `grad` (the math plane) into a payload; `wire_elements` is the modeled element count,
  // from which payload.wire_bytes is set with encoded_bytes().
  virtual Payload compress(const Eigen::Ref<const Eigen::VectorXf>& grad, std::uint64_t wire_elements, Rng& rng) = 0;
  // Decodes a payload back to a dense vector of `size` elements.
  virtual Eigen::VectorXf decompress(const Payload& payload, Eigen::Index size) const = 0;
  // Bytes of the encoding of a dense fp32 vector of `elements` values (the modeled plane).
  virtual std::uint64_t encoded_bytes(std::uint64_t elements) const = 0;
  // Payloads can be added without decompressing, so reducing collectives may carry them.
  virtual bool summable() const = 0;
  virtual bool unbiased() const = 0;
  // Work charged to the host for encoding / decoding `elements` values.
  virtual double encode_flops(std::uint64_t elements) const { return static_cast<double>(elements); }
  virtual double decode_flops(std::uint64_t elements) const { return static_cast<double>(elements); }
};

}  // namespace aggsim
