#include "algorithms/compression/compressor.hpp"

#include <stdexcept>

namespace aggsim {

Payload Compressor::compress(const Eigen::Ref<const Eigen::VectorXf>& values, const TensorDesc& t, Rng& rng) {
  if (values.size() != t.proxy.size())
    throw std::invalid_argument("compress: values do not match the tensor's proxy shape");
  if (values.size() == 0) {  // math off: the wire plane only
    Payload p;
    p.wire_bytes = encoded_bytes(t.wire);
    return p;
  }
  return encode(values, t, rng);
}

Eigen::VectorXf Compressor::decompress(const Payload& payload, const TensorDesc& t) const {
  if (t.proxy.size() == 0) return Eigen::VectorXf();
  return decode(payload, t);
}

Eigen::VectorXf Compressor::reduce(const std::vector<Payload>& payloads, const TensorDesc& t,
                                   const ReduceOp& op) const {
  if (payloads.empty() || t.proxy.size() == 0) return Eigen::VectorXf();
  Eigen::VectorXf acc = decompress(payloads.front(), t);
  for (std::size_t i = 1; i < payloads.size(); ++i) op.combine(acc, decompress(payloads[i], t));
  op.finalize(acc, static_cast<int>(payloads.size()));
  return acc;
}

Compressor::EncodingError Compressor::encoding_error(const Eigen::Ref<const Eigen::VectorXf>& values,
                                                     const Payload& payload, const TensorDesc& t) const {
  const Eigen::VectorXd v = values.cast<double>();
  return {(decompress(payload, t).cast<double>() - v).squaredNorm(), v.squaredNorm()};
}

namespace {

template <class T, class F>
T sum_over_pieces(const WireLayout& wire, F per_piece) {
  T total = 0;
  for (const WirePiece& piece : wire.pieces) total += per_piece(piece);
  return total;
}

}  // namespace

std::uint64_t Compressor::encoded_bytes(const WireLayout& wire) const {
  return sum_over_pieces<std::uint64_t>(wire, [this](const WirePiece& p) { return piece_bytes(p); });
}

double Compressor::encode_flops(const WireLayout& wire) const {
  return sum_over_pieces<double>(wire, [this](const WirePiece& p) { return piece_encode_flops(p); });
}

double Compressor::decode_flops(const WireLayout& wire) const {
  return sum_over_pieces<double>(wire, [this](const WirePiece& p) { return piece_decode_flops(p); });
}

std::uint64_t payload_data_bytes(const Payload& p, std::uint32_t value_bytes) {
  return static_cast<std::uint64_t>(p.values.size()) * value_bytes + p.indices.size() * 4 +
         static_cast<std::uint64_t>(p.scales.size()) * 4 + p.codes.size();
}

Payload compress_on_rank(RankContext& ctx, Compressor& c, const Eigen::Ref<const Eigen::VectorXf>& values,
                         const TensorDesc& t) {
  Rng rng =
      c.shared_randomness() ? ctx.shared_rng(Stream::compression, t.id) : ctx.rng(Stream::compression, t.id);
  ctx.compute(c.encode_flops(t.wire), "compress");
  Payload p = c.compress(values, t, rng);
  if (ctx.compression && values.size() > 0) {
    const Compressor::EncodingError e = c.encoding_error(values, p, t);
    ctx.compression->add(e.error_sq, e.norm_sq);
  }
  return p;
}

void charge_decode(RankContext& ctx, const Compressor& c, const TensorDesc& t, int count) {
  ctx.compute(count * c.decode_flops(t.wire), "decompress");
}

}  // namespace aggsim
