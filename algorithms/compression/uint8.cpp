// 8-bit uniform quantization: per tensor, min and max (two fp32) and one byte per value, the
// nearest of 256 evenly spaced levels between them: 8 + n bytes. Round to nearest is
// deterministic, so slightly biased; not summable (each rank has its own range).
#include <cmath>

#include "algorithms/registry.hpp"

namespace aggsim {
namespace {

class Uint8 final : public Compressor {
 public:
  std::uint64_t piece_bytes(const WirePiece& piece) const override {
    return 2 * kFloatBytes + static_cast<std::uint64_t>(piece.shape.size());
  }
  bool summable() const override { return false; }
  bool unbiased() const override { return false; }
  double piece_encode_flops(const WirePiece& piece) const override {
    return 4.0 * static_cast<double>(piece.shape.size());
  }
  double piece_decode_flops(const WirePiece& piece) const override {
    return 2.0 * static_cast<double>(piece.shape.size());
  }

 protected:
  Payload encode(const Eigen::Ref<const Eigen::VectorXf>& v, const TensorDesc& t, Rng&) override {
    Payload p;
    const float lo = v.minCoeff(), hi = v.maxCoeff();
    p.scales.resize(2);
    p.scales << lo, hi;
    const float to_code = hi > lo ? 255.0f / (hi - lo) : 0.0f;
    p.codes.resize(static_cast<std::size_t>(v.size()));
    for (Eigen::Index i = 0; i < v.size(); ++i)
      p.codes[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(std::lrint((v[i] - lo) * to_code));
    p.wire_bytes = encoded_bytes(t.wire);
    return p;
  }
  Eigen::VectorXf decode(const Payload& p, const TensorDesc& t) const override {
    const float lo = p.scales[0], step = (p.scales[1] - p.scales[0]) / 255.0f;
    Eigen::VectorXf out(t.proxy.size());
    for (Eigen::Index i = 0; i < out.size(); ++i)
      out[i] = lo + step * static_cast<float>(p.codes[static_cast<std::size_t>(i)]);
    return out;
  }
};

}  // namespace

CompressorInfo uint8_compressor_entry() {
  return {
      "uint8", "8-bit uniform quantization between the tensor's min and max; biased", {}, [](const Params&) {
        return std::make_unique<Uint8>();
      }};
}

}  // namespace aggsim
