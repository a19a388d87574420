// Half precision: each value rounded to the nearest IEEE fp16 (2 bytes; 2n bytes per tensor), as
// PyTorch DDP's fp16 compression hook. Summable: the fp16 values ride reducing collectives (the
// partial sums in flight are kept in fp32, where NCCL would round each hop to fp16). Round to
// nearest is deterministic, so slightly biased; values beyond the fp16 range become infinite.
#include <Eigen/Core>

#include "algorithms/registry.hpp"
#include "sim/api/wire_dtype.hpp"

namespace aggsim {
namespace {

class Fp16 final : public Compressor {
 public:
  std::uint64_t piece_bytes(const WirePiece& piece) const override {
    return 2 * static_cast<std::uint64_t>(piece.shape.size());
  }
  bool summable() const override { return true; }
  bool unbiased() const override { return false; }
  std::uint32_t value_bytes() const override { return 2; }

 protected:
  Payload encode(const Eigen::Ref<const Eigen::VectorXf>& v, const TensorDesc& t, Rng&) override {
    Payload p;
    p.values = v;
    round_to(p.values, WireDtype::fp16);
    p.wire_bytes = encoded_bytes(t.wire);
    return p;
  }
  Eigen::VectorXf decode(const Payload& p, const TensorDesc&) const override { return p.values; }
};

}  // namespace

CompressorInfo fp16_compressor_entry() {
  return {"fp16", "IEEE half precision, 2 bytes per value; summable", {}, [](const Params&) {
            return std::make_unique<Fp16>();
          }};
}

}  // namespace aggsim
