// No compression: the dense fp32 vector as it is. Summable and unbiased; costs nothing to encode.
#include <memory>

#include "algorithms/registry.hpp"

namespace aggsim {
namespace {

class Identity final : public Compressor {
 public:
  Payload compress(const Eigen::Ref<const Eigen::VectorXf>& grad, std::uint64_t wire_elements, Rng&) override {
    Payload p;
    p.values = grad;
    p.wire_bytes = encoded_bytes(wire_elements);
    return p;
  }
  Eigen::VectorXf decompress(const Payload& payload, Eigen::Index) const override { return payload.values; }
  std::uint64_t encoded_bytes(std::uint64_t elements) const override { return elements * kFloatBytes; }
  bool summable() const override { return true; }
  bool unbiased() const override { return true; }
  double encode_flops(std::uint64_t) const override { return 0; }
  double decode_flops(std::uint64_t) const override { return 0; }
};

}  // namespace

CompressorInfo identity_compressor_entry() {
  return {"none", "no compression: dense fp32", {}, [](const Params&) { return std::make_unique<Identity>(); }};
}

}  // namespace aggsim
