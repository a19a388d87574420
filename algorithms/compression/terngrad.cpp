// TernGrad (Wen et al. 2017): v -> s * sign(v) * b with s = max|v| and b ~ Bernoulli(|v| / s), so
// each value is one of {-s, 0, +s} and the result is unbiased. Encoding: one fp32 scale and 2 bits
// per value (0, +1, -1), packed: 4 + ceil(n / 4) bytes. Not summable (scales differ per rank).
#include "algorithms/compression/bit_pack.hpp"
#include "algorithms/compression/stochastic_rounding.hpp"
#include "algorithms/registry.hpp"

namespace aggsim {
namespace {

constexpr unsigned kTritBits = 2;

class TernGrad final : public Compressor {
 public:
  std::uint64_t piece_bytes(const WirePiece& piece) const override {
    return kFloatBytes + packed_bytes(static_cast<std::uint64_t>(piece.shape.size()), kTritBits);
  }
  bool summable() const override { return false; }
  bool unbiased() const override { return true; }
  double piece_encode_flops(const WirePiece& piece) const override {
    return 5.0 * static_cast<double>(piece.shape.size());
  }

 protected:
  Payload encode(const Eigen::Ref<const Eigen::VectorXf>& v, const TensorDesc& t, Rng& rng) override {
    Payload p;
    const float s = v.cwiseAbs().maxCoeff();
    p.scales = Eigen::VectorXf::Constant(1, s);
    BitWriter out(p.codes, static_cast<std::uint64_t>(v.size()), kTritBits);
    UniformBlocks uniforms(rng);
    const float inv = s > 0 ? 1.0f / s : 0.0f;
    std::uint32_t codes[UniformBlocks::kBlock];
    for (Eigen::Index i0 = 0; i0 < v.size(); i0 += UniformBlocks::kBlock) {
      const int m = static_cast<int>(std::min<Eigen::Index>(UniformBlocks::kBlock, v.size() - i0));
      const float* u = uniforms.next();
      const float* x = v.data() + i0;
      for (int i = 0; i < m; ++i) codes[i] = u[i] < std::abs(x[i]) * inv ? (x[i] < 0 ? 2u : 1u) : 0u;
      out.put(codes, static_cast<std::size_t>(m), kTritBits);
    }
    out.flush();
    p.wire_bytes = encoded_bytes(t.wire);
    return p;
  }
  Eigen::VectorXf decode(const Payload& p, const TensorDesc& t) const override {
    const float s = p.scales[0];
    const float value_of[4] = {0.0f, s, -s, 0.0f};
    Eigen::VectorXf out(t.proxy.size());
    BitReader in(p.codes);
    std::uint32_t codes[UniformBlocks::kBlock];
    for (Eigen::Index i0 = 0; i0 < out.size(); i0 += UniformBlocks::kBlock) {
      const int m = static_cast<int>(std::min<Eigen::Index>(UniformBlocks::kBlock, out.size() - i0));
      in.get(codes, static_cast<std::size_t>(m), kTritBits);
      for (int i = 0; i < m; ++i) out[i0 + i] = value_of[codes[i]];
    }
    return out;
  }
};

}  // namespace

CompressorInfo terngrad_compressor_entry() {
  return {"terngrad",
          "max|v| scale + ternary {-1,0,+1} by stochastic rounding, 2 bits each; unbiased",
          {},
          [](const Params&) { return std::make_unique<TernGrad>(); }};
}

}  // namespace aggsim
