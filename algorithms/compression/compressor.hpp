#pragma once
// A gradient compressor: real encoding of real numbers, plus the exact size of that encoding.
// Compressors never communicate; aggregators decide how payloads travel (GRACE's split).
//
// Two planes: the math runs on the proxy values (viewed as a proxy.rows x proxy.cols matrix when a
// compressor needs one), while the bytes on the wire come from encoded_bytes() of the modeled
// tensor: the compressor's formula summed over its pieces (layer matrices and vectors), as a real
// run compresses each layer's tensors. With `math: off` the proxy is empty and only the wire size
// is produced.
#include <Eigen/Core>
#include <cstdint>
#include <vector>

#include "sim/api/aggregator.hpp"
#include "sim/comm/payload.hpp"
#include "sim/core/random.hpp"

namespace aggsim {

// Which tensor is compressed: its shape on both planes, and a stable id (layer, chunk, shard) under
// which per-tensor state (error-feedback residual, PowerSGD warm start) is kept. `proxy_layout`
// lists the proxy's own tensors (Gradient::proxy_layout; empty: no structure, `proxy` alone).
struct TensorDesc {
  Shape proxy;
  WireLayout wire;
  std::uint64_t id = 0;
  WireLayout proxy_layout;

  static TensorDesc flat(std::int64_t proxy_elements, std::uint64_t wire_elements, std::uint64_t id = 0) {
    return {{proxy_elements, 1}, WireLayout::flat(static_cast<std::int64_t>(wire_elements)), id, {}};
  }
  static TensorDesc of(const Gradient& g, std::uint64_t id = 0) {
    return {g.proxy_shape, g.wire_shape, id, g.proxy_layout};
  }
};

class Compressor {
 public:
  virtual ~Compressor() = default;

  // Encodes `values` (the proxy of tensor `t`). payload.wire_bytes is the size of this encoding on
  // the modeled shape (encoded_bytes(t.wire) for fixed-size encodings).
  Payload compress(const Eigen::Ref<const Eigen::VectorXf>& values, const TensorDesc& t, Rng& rng);
  // Decodes a payload of tensor `t` back to t.proxy.size() dense values (empty with math off).
  Eigen::VectorXf decompress(const Payload& payload, const TensorDesc& t) const;

  // Flat conveniences: a vector standing for `wire_elements` modeled values, tensor id 0.
  Payload compress(const Eigen::Ref<const Eigen::VectorXf>& values, std::uint64_t wire_elements, Rng& rng) {
    return compress(values, TensorDesc::flat(values.size(), wire_elements), rng);
  }
  Eigen::VectorXf decompress(const Payload& payload, Eigen::Index size) const {
    return decompress(payload, TensorDesc::flat(size, static_cast<std::uint64_t>(size)));
  }

  // Bytes of the encoding of one modeled piece. Exact for fixed-size encodings; for data-dependent
  // ones (threshold: an upper bound, ATOMO: the expected size) payload.wire_bytes carries the
  // actual size.
  virtual std::uint64_t piece_bytes(const WirePiece& piece) const = 0;
  // Bytes of a modeled tensor: the sum over its pieces.
  std::uint64_t encoded_bytes(const WireLayout& wire) const;
  std::uint64_t encoded_bytes(const Shape& matrix) const { return encoded_bytes(WireLayout::matrix(matrix)); }
  std::uint64_t encoded_bytes(std::uint64_t elements) const {
    return encoded_bytes(WireLayout::flat(static_cast<std::int64_t>(elements)));
  }

  // Payload.values of different ranks can be added element-wise and decoding is linear in them (the
  // rest of the payload is identical on every rank), so reducing collectives may carry them.
  virtual bool summable() const = 0;
  virtual bool unbiased() const = 0;
  // Draws must come from the stream shared by all ranks (shared-seed random-k).
  virtual bool shared_randomness() const { return false; }
  // Bytes per entry of payload.values on the wire (fp16 carries 2-byte values).
  virtual std::uint32_t value_bytes() const { return 4; }

  // Work charged to the host for encoding / decoding one modeled piece.
  virtual double piece_encode_flops(const WirePiece& piece) const {
    return static_cast<double>(piece.shape.size());
  }
  virtual double piece_decode_flops(const WirePiece& piece) const {
    return static_cast<double>(piece.shape.size());
  }
  // ... and a modeled tensor (the sum over its pieces), or a flat one of `elements` values.
  double encode_flops(const WireLayout& wire) const;
  double decode_flops(const WireLayout& wire) const;
  double encode_flops(std::uint64_t elements) const {
    return encode_flops(WireLayout::flat(static_cast<std::int64_t>(elements)));
  }
  double decode_flops(std::uint64_t elements) const {
    return decode_flops(WireLayout::flat(static_cast<std::int64_t>(elements)));
  }

  // Combines all ranks' payloads of one tensor (in rank order) into the reduced, finalized result.
  // Default: decode each and reduce with `op`; sign compression replaces it with a majority vote.
  virtual Eigen::VectorXf reduce(const std::vector<Payload>& payloads, const TensorDesc& t,
                                 const ReduceOp& op) const;

  // What the encoding just made of `values` did to the vector it stands for (steps.csv's
  // compress_error): ||decode(payload) - v||^2 and ||v||^2, in double precision. v is `values`;
  // error feedback overrides it with the compensated vector it really encoded.
  struct EncodingError {
    double error_sq = 0;
    double norm_sq = 0;
  };
  virtual EncodingError encoding_error(const Eigen::Ref<const Eigen::VectorXf>& values,
                                       const Payload& payload, const TensorDesc& t) const;

 protected:
  virtual Payload encode(const Eigen::Ref<const Eigen::VectorXf>& values, const TensorDesc& t, Rng& rng) = 0;
  virtual Eigen::VectorXf decode(const Payload& payload, const TensorDesc& t) const = 0;
};

// Bytes of the data a payload really holds (values at the compressor's width, 4-byte indices and
// scales, code bytes): what a real implementation would send. Tests compare it with the formula.
std::uint64_t payload_data_bytes(const Payload& p, std::uint32_t value_bytes = 4);

// On a rank: draws from the rank's (or the shared) compression stream and charges the encode work.
Payload compress_on_rank(RankContext& ctx, Compressor& c, const Eigen::Ref<const Eigen::VectorXf>& values,
                         const TensorDesc& t);
// On a rank: charges the decode work of `count` payloads.
void charge_decode(RankContext& ctx, const Compressor& c, const TensorDesc& t, int count = 1);

}  // namespace aggsim
