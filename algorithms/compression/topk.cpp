// Top-k sparsification (Aji & Heafield; Stich et al.): keep the k values of largest magnitude,
// sent as (uint32 index, fp32 value) pairs: 8k bytes. The k-th largest magnitude is found with
// nth_element on a copy of |v| (linear time, no full sort); ties at the threshold are broken by
// position. Biased (error feedback corrects it) and not summable: ranks keep different indices.
#include <algorithm>

#include "algorithms/compression/sparse.hpp"
#include "algorithms/registry.hpp"

namespace aggsim {
namespace {

class TopK final : public Compressor {
 public:
  explicit TopK(SparsityBudget budget) : budget_(budget) {}

  std::uint64_t encoded_bytes(const Shape& wire) const override {
    return static_cast<std::uint64_t>(budget_.on_wire(wire.size())) * kSparseEntryBytes;
  }
  bool summable() const override { return false; }
  bool unbiased() const override { return false; }
  // Copy, selection (~2n comparisons on average) and the gathering pass.
  double encode_flops(std::uint64_t n) const override { return 4.0 * static_cast<double>(n); }
  double decode_flops(std::uint64_t n) const override {
    return static_cast<double>(budget_.on_wire(static_cast<std::int64_t>(n)));
  }

 protected:
  Payload encode(const Eigen::Ref<const Eigen::VectorXf>& v, const TensorDesc& t, Rng&) override {
    const Eigen::Index n = v.size(), k = budget_.on_proxy(n, t.wire.size());
    magnitudes_.resize(static_cast<std::size_t>(n));
    for (Eigen::Index i = 0; i < n; ++i) magnitudes_[static_cast<std::size_t>(i)] = std::abs(v[i]);
    std::nth_element(magnitudes_.begin(), magnitudes_.begin() + (k - 1), magnitudes_.end(), std::greater<float>());
    const float threshold = magnitudes_[static_cast<std::size_t>(k - 1)];
    // Everything strictly above the threshold is kept; ties fill the remaining places in order.
    Eigen::Index above = 0;
    for (Eigen::Index i = 0; i < n; ++i) above += std::abs(v[i]) > threshold;
    Eigen::Index ties_left = k - above;
    Payload p;
    p.indices.reserve(static_cast<std::size_t>(k));
    p.values.resize(k);
    Eigen::Index j = 0;
    for (Eigen::Index i = 0; i < n && j < k; ++i) {
      const float a = std::abs(v[i]);
      if (a > threshold || (a == threshold && ties_left-- > 0)) {
        p.indices.push_back(static_cast<std::uint32_t>(i));
        p.values[j++] = v[i];
      }
    }
    p.wire_bytes = encoded_bytes(t.wire);
    return p;
  }
  Eigen::VectorXf decode(const Payload& p, const TensorDesc& t) const override {
    return scatter(p.indices, p.values, t.proxy.size());
  }

 private:
  SparsityBudget budget_;
  std::vector<float> magnitudes_;  // scratch, reused across calls
};

}  // namespace

CompressorInfo topk_compressor_entry() {
  return {"topk", "k largest magnitudes as (index, value) pairs; biased, not summable", SparsityBudget::specs(),
          [](const Params& p) { return std::make_unique<TopK>(SparsityBudget::from(p)); }};
}

}  // namespace aggsim
