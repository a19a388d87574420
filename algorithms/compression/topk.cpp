// Top-k sparsification (Aji & Heafield; Stich et al.): keep the k values of largest magnitude,
// sent as (uint32 index, fp32 value) pairs: 8k bytes. The k-th largest magnitude is found with
// nth_element (linear time, no full sort) over the candidates: on large tensors a strided sample
// gives a lower bound on it, so only the few values above the bound are selected among (if the
// bound was too high, everything is); exact either way. Ties at the threshold are broken by
// position. Biased (error feedback corrects it) and not summable: ranks keep different indices.
#include <algorithm>
#include <cmath>

#include "algorithms/compression/sparse.hpp"
#include "algorithms/registry.hpp"

namespace aggsim {
namespace {

class TopK final : public Compressor {
 public:
  explicit TopK(SparsityBudget budget) : budget_(budget) {}

  std::uint64_t piece_bytes(const WirePiece& piece) const override {
    return static_cast<std::uint64_t>(budget_.on_wire(piece.shape.size())) * kSparseEntryBytes;
  }
  bool summable() const override { return false; }
  bool unbiased() const override { return false; }
  // Copy, selection (~2n comparisons on average) and the gathering pass.
  double piece_encode_flops(const WirePiece& piece) const override {
    return 4.0 * static_cast<double>(piece.shape.size());
  }
  double piece_decode_flops(const WirePiece& piece) const override {
    return static_cast<double>(budget_.on_wire(piece.shape.size()));
  }

 protected:
  Payload encode(const Eigen::Ref<const Eigen::VectorXf>& v, const TensorDesc& t, Rng&) override {
    const Eigen::Index n = v.size(), k = budget_.on_proxy(n, t.wire);
    for (float bound = sampled_bound(v, k);; bound = 0) {
      candidates_.clear();
      values_.clear();
      for (Eigen::Index i = 0; i < n; ++i) {
        if (std::abs(v[i]) >= bound) {  // rarely taken on large tensors, so well predicted
          candidates_.push_back(static_cast<std::uint32_t>(i));
          values_.push_back(v[i]);
        }
      }
      if (static_cast<Eigen::Index>(candidates_.size()) >= k) break;
    }
    magnitudes_.resize(values_.size());
    for (std::size_t i = 0; i < values_.size(); ++i) magnitudes_[i] = std::abs(values_[i]);
    std::nth_element(magnitudes_.begin(), magnitudes_.begin() + (k - 1), magnitudes_.end(),
                     std::greater<float>());
    const float threshold = magnitudes_[static_cast<std::size_t>(k - 1)];
    // Everything strictly above the threshold is kept; ties fill the remaining places in order.
    Eigen::Index above = 0;
    // The candidates' values are kept contiguous: no scattered reads of the large tensor.
    for (float x : values_) above += std::abs(x) > threshold;
    Eigen::Index ties_left = k - above;
    Payload p;
    p.indices.reserve(static_cast<std::size_t>(k));
    p.values.resize(k);
    Eigen::Index j = 0;
    for (std::size_t c = 0; c < candidates_.size() && j < k; ++c) {
      const float a = std::abs(values_[c]);
      if (a > threshold || (a == threshold && ties_left-- > 0)) {
        p.indices.push_back(candidates_[c]);
        p.values[j++] = values_[c];
      }
    }
    p.wire_bytes = encoded_bytes(t.wire);
    return p;
  }
  Eigen::VectorXf decode(const Payload& p, const TensorDesc& t) const override {
    return scatter(p.indices, p.values, t.proxy.size());
  }

 private:
  // A value no larger than the k-th largest magnitude with high probability (0 on small tensors):
  // the magnitude ranked about 2k/n + 4 standard deviations into a strided sample of 4096.
  float sampled_bound(const Eigen::Ref<const Eigen::VectorXf>& v, Eigen::Index k) {
    constexpr Eigen::Index kSample = 4096;
    const Eigen::Index n = v.size();
    if (n < 16 * kSample || k > n / 8) return 0.0f;
    const Eigen::Index stride = n / kSample;
    magnitudes_.resize(kSample);
    for (Eigen::Index j = 0; j < kSample; ++j)
      magnitudes_[static_cast<std::size_t>(j)] = std::abs(v[j * stride]);
    const double expected = static_cast<double>(kSample) * static_cast<double>(k) / static_cast<double>(n);
    const auto rank = std::min<Eigen::Index>(
        kSample - 1, static_cast<Eigen::Index>(2 * expected + 4 * std::sqrt(expected) + 4));
    std::nth_element(magnitudes_.begin(), magnitudes_.begin() + rank, magnitudes_.end(),
                     std::greater<float>());
    return magnitudes_[static_cast<std::size_t>(rank)];
  }

  SparsityBudget budget_;
  std::vector<std::uint32_t> candidates_;  // scratch, reused across calls
  std::vector<float> values_, magnitudes_;
};

}  // namespace

CompressorInfo topk_compressor_entry() {
  return {"topk", "k largest magnitudes as (index, value) pairs; biased, not summable",
          SparsityBudget::specs(),
          [](const Params& p) { return std::make_unique<TopK>(SparsityBudget::from(p)); }};
}

}  // namespace aggsim
