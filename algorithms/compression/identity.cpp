// No compression: the dense fp32 vector as it is. Summable and unbiased; costs nothing to encode.
#include <memory>

#include "algorithms/registry.hpp"

namespace aggsim {
namespace {

class Identity final : public Compressor {
 public:
  std::uint64_t piece_bytes(const WirePiece& piece) const override {
    return static_cast<std::uint64_t>(piece.shape.size()) * kFloatBytes;
  }
  bool summable() const override { return true; }
  bool unbiased() const override { return true; }
  double piece_encode_flops(const WirePiece&) const override { return 0; }
  double piece_decode_flops(const WirePiece&) const override { return 0; }

 protected:
  Payload encode(const Eigen::Ref<const Eigen::VectorXf>& v, const TensorDesc& t, Rng&) override {
    Payload p;
    p.values = v;
    p.wire_bytes = encoded_bytes(t.wire);
    return p;
  }
  Eigen::VectorXf decode(const Payload& p, const TensorDesc&) const override { return p.values; }
};

}  // namespace

CompressorInfo identity_compressor_entry() {
  return {
      "none", "no compression: dense fp32", {}, [](const Params&) { return std::make_unique<Identity>(); }};
}

}  // namespace aggsim
