// Sign compression (signSGD, Bernstein et al. 2018; scaled as in EF-signSGD, Karimireddy et al.
// 2019): one bit per value and one fp32 scale, the mean magnitude ||v||_1 / n, so decoding gives
// scale * sign(v). Encoding: 4 + ceil(n / 8) bytes. Biased, not summable.
// Aggregation is a majority vote (signSGD with majority vote): coordinate j of the result is
// sign(sum_i sign(v_ij)) (0 on a tie) times the op applied to the ranks' scales.
#include "algorithms/compression/bit_pack.hpp"
#include "algorithms/registry.hpp"

namespace aggsim {
namespace {

class Sign final : public Compressor {
 public:
  std::uint64_t piece_bytes(const WirePiece& piece) const override {
    return kFloatBytes + packed_bytes(static_cast<std::uint64_t>(piece.shape.size()), 1);
  }
  bool summable() const override { return false; }
  bool unbiased() const override { return false; }
  double piece_encode_flops(const WirePiece& piece) const override {
    return 2.0 * static_cast<double>(piece.shape.size());
  }

  Eigen::VectorXf reduce(const std::vector<Payload>& payloads, const TensorDesc& t,
                         const ReduceOp& op) const override {
    const Eigen::Index n = t.proxy.size();
    if (payloads.empty() || n == 0) return Eigen::VectorXf();
    Eigen::VectorXi votes = Eigen::VectorXi::Zero(n);
    Eigen::VectorXf scale = payloads.front().scales;
    for (std::size_t r = 0; r < payloads.size(); ++r) {
      const auto& codes = payloads[r].codes;
      for (Eigen::Index i = 0; i < n; ++i)
        votes[i] += (codes[static_cast<std::size_t>(i >> 3)] >> (i & 7)) & 1 ? -1 : 1;
      if (r > 0) op.combine(scale, payloads[r].scales);
    }
    op.finalize(scale, static_cast<int>(payloads.size()));
    Eigen::VectorXf out(n);
    for (Eigen::Index i = 0; i < n; ++i) out[i] = votes[i] > 0 ? scale[0] : votes[i] < 0 ? -scale[0] : 0.0f;
    return out;
  }

 protected:
  Payload encode(const Eigen::Ref<const Eigen::VectorXf>& v, const TensorDesc& t, Rng&) override {
    const Eigen::Index n = v.size();
    Payload p;
    p.scales = Eigen::VectorXf::Constant(1, v.cwiseAbs().sum() / static_cast<float>(n));
    p.codes.assign(packed_bytes(static_cast<std::uint64_t>(n), 1), 0);
    // Eight values per byte, bit i of byte j is the sign of value 8j + i (1: negative).
    const Eigen::Index full = n / 8;
    for (Eigen::Index j = 0; j < full; ++j) {
      unsigned byte = 0;
      for (int i = 0; i < 8; ++i) byte |= static_cast<unsigned>(v[8 * j + i] < 0) << i;
      p.codes[static_cast<std::size_t>(j)] = static_cast<std::uint8_t>(byte);
    }
    for (Eigen::Index i = 8 * full; i < n; ++i)
      p.codes[static_cast<std::size_t>(full)] |=
          static_cast<std::uint8_t>(static_cast<unsigned>(v[i] < 0) << (i & 7));
    p.wire_bytes = encoded_bytes(t.wire);
    return p;
  }
  Eigen::VectorXf decode(const Payload& p, const TensorDesc& t) const override {
    const float s = p.scales[0];
    const Eigen::Index n = t.proxy.size();
    Eigen::VectorXf out(n);
    for (Eigen::Index j = 0; j * 8 < n; ++j) {
      const unsigned byte = p.codes[static_cast<std::size_t>(j)];
      const Eigen::Index m = std::min<Eigen::Index>(8, n - 8 * j);
      for (Eigen::Index i = 0; i < m; ++i) out[8 * j + i] = s - 2 * s * static_cast<float>((byte >> i) & 1u);
    }
    return out;
  }
};

}  // namespace

CompressorInfo sign_compressor_entry() {
  return {"sign",
          "1 bit per value + mean-magnitude scale; majority-vote aggregation; biased",
          {},
          [](const Params&) { return std::make_unique<Sign>(); }};
}

}  // namespace aggsim
