// QSGD (Alistarh et al. 2017): per bucket of `bucket` values (0: the whole tensor), send the L2
// norm and, per value, its sign and a level l in {0..s} drawn by stochastic rounding of s|v|/norm,
// so Q(v) = norm * sign * l / s is unbiased with E||Q(v) - v||^2 <= min(n/s^2, sqrt(n)/s) ||v||^2
// (Lemma 3.1). Encoding: fixed width (not Elias): 1 sign bit + ceil(log2(s+1)) level bits per
// value, packed, plus one fp32 norm per bucket: 4 * buckets + ceil(n * bits / 8) bytes.
#include <cmath>
#include <cstring>

#include "algorithms/compression/bit_pack.hpp"
#include "algorithms/compression/stochastic_rounding.hpp"
#include "algorithms/registry.hpp"

namespace aggsim {
namespace {

unsigned level_bits(std::uint32_t s) {
  unsigned b = 0;
  while ((std::uint64_t{1} << b) < static_cast<std::uint64_t>(s) + 1) ++b;
  return b;
}

class Qsgd final : public Compressor {
 public:
  Qsgd(std::uint32_t levels, std::int64_t bucket)
      : s_(levels), bucket_(bucket), bits_(1 + level_bits(levels)) {}

  std::uint64_t piece_bytes(const WirePiece& piece) const override {
    const auto n = static_cast<std::uint64_t>(piece.shape.size());
    return kFloatBytes * buckets(static_cast<std::int64_t>(n)) + packed_bytes(n, bits_);
  }
  bool summable() const override { return false; }
  bool unbiased() const override { return true; }
  // Norm, scale, round with one uniform, pack.
  double piece_encode_flops(const WirePiece& piece) const override {
    return 8.0 * static_cast<double>(piece.shape.size());
  }
  double piece_decode_flops(const WirePiece& piece) const override {
    return 3.0 * static_cast<double>(piece.shape.size());
  }

 protected:
  Payload encode(const Eigen::Ref<const Eigen::VectorXf>& v, const TensorDesc& t, Rng& rng) override {
    const std::int64_t n = v.size(), b = bucket_size(n), nb = buckets(n);
    Payload p;
    p.scales.resize(nb);
    BitWriter out(p.codes, static_cast<std::uint64_t>(n), bits_);
    UniformBlocks uniforms(rng);
    std::uint32_t codes[UniformBlocks::kBlock];
    const float s = static_cast<float>(s_);
    for (std::int64_t k = 0; k < nb; ++k) {
      const std::int64_t begin = k * b, count = std::min(b, n - begin);
      const float norm = v.segment(begin, count).norm();
      p.scales[k] = norm;
      const float to_level = norm > 0 ? s / norm : 0.0f;
      for (std::int64_t i0 = 0; i0 < count; i0 += UniformBlocks::kBlock) {
        const int m = static_cast<int>(std::min<std::int64_t>(UniformBlocks::kBlock, count - i0));
        const float* u = uniforms.next();
        const float* x = v.data() + begin + i0;
        for (int i = 0; i < m; ++i) {  // level = floor(r) + (u < frac(r)), r = s|x|/norm <= s
          float r = std::abs(x[i]) * to_level;
          r = r < s ? r : s;  // rounding can leave r just above s; this form vectorises (minps)
          // Signed 32-bit conversions (r <= s <= 2^20): SSE2 vectorises those, not unsigned ones.
          const auto low = static_cast<std::int32_t>(r);  // floor, as r >= 0
          const auto level = low + static_cast<std::int32_t>(u[i] < r - static_cast<float>(low));
          std::uint32_t bits;
          std::memcpy(&bits, &x[i], sizeof bits);  // the sign bit, read as an integer shift
          codes[i] = static_cast<std::uint32_t>(level) << 1 | bits >> 31;
        }
        out.put(codes, static_cast<std::size_t>(m), bits_);
      }
    }
    out.flush();
    p.wire_bytes = encoded_bytes(t.wire);
    return p;
  }

  Eigen::VectorXf decode(const Payload& p, const TensorDesc& t) const override {
    const std::int64_t n = t.proxy.size(), b = bucket_size(n);
    Eigen::VectorXf out(n);
    BitReader in(p.codes);
    std::uint32_t codes[UniformBlocks::kBlock];
    for (std::int64_t begin = 0, k = 0; begin < n; begin += b, ++k) {
      const float unit = p.scales[k] / static_cast<float>(s_);
      const std::int64_t end = std::min(n, begin + b);
      for (std::int64_t i0 = begin; i0 < end; i0 += UniformBlocks::kBlock) {
        const int m = static_cast<int>(std::min<std::int64_t>(UniformBlocks::kBlock, end - i0));
        in.get(codes, static_cast<std::size_t>(m), bits_);
        float* y = out.data() + i0;
        // Branch-free: the sign bit is random, a branch on it would mispredict half the time.
        for (int i = 0; i < m; ++i)
          y[i] = unit * static_cast<float>(static_cast<std::int32_t>(codes[i] >> 1)) *
                 (1.0f - 2.0f * static_cast<float>(static_cast<std::int32_t>(codes[i] & 1u)));
      }
    }
    return out;
  }

 private:
  std::int64_t bucket_size(std::int64_t n) const {
    return bucket_ > 0 ? bucket_ : std::max<std::int64_t>(n, 1);
  }
  std::uint64_t buckets(std::int64_t n) const {
    return static_cast<std::uint64_t>((n + bucket_size(n) - 1) / bucket_size(n));
  }

  std::uint32_t s_;
  std::int64_t bucket_;
  unsigned bits_;
};

}  // namespace

CompressorInfo qsgd_compressor_entry() {
  return {
      "qsgd",
      "norm + sign + stochastic level in {0..s}, fixed-width bits; unbiased",
      {ParamSpec("levels", ParamKind::integer, "16", "quantization levels s").between(1, 1 << 20),
       ParamSpec("bucket", ParamKind::integer, "0", "values per norm (0: one norm per tensor)").at_least(0)},
      [](const Params& p) {
        return std::make_unique<Qsgd>(static_cast<std::uint32_t>(p.integer("levels")), p.integer("bucket"));
      }};
}

}  // namespace aggsim
