// Random-k sparsification (Stich et al.; Wangni et al.): keep k coordinates drawn uniformly without
// replacement, scaled by d/k so the result is unbiased; its variance is (d/k - 1)||v||^2.
// Indices are drawn with Floyd's algorithm on a bitmap (k draws, sorted output for free).
// Encoding: (uint32 index, fp32 value) pairs, 8k bytes. With `shared_seed: true` every rank draws
// the same indices from the stream shared by all ranks, so only the k values travel (4k bytes;
// the receiver regenerates the indices from the step's shared seed) and payloads are summable:
// they can ride a reducing all-reduce.
#include "algorithms/compression/sparse.hpp"
#include "algorithms/registry.hpp"

namespace aggsim {
namespace {

std::vector<std::uint32_t> sample_indices(std::int64_t n, std::int64_t k, Rng& rng) {
  std::vector<std::uint64_t> taken(static_cast<std::size_t>((n + 63) / 64), 0);
  auto test_and_set = [&](std::uint64_t i) {
    std::uint64_t& word = taken[i >> 6];
    const std::uint64_t bit = std::uint64_t{1} << (i & 63);
    const bool was = (word & bit) != 0;
    word |= bit;
    return was;
  };
  for (auto j = static_cast<std::uint64_t>(n - k); j < static_cast<std::uint64_t>(n); ++j)
    if (test_and_set(uniform_below(rng, j + 1))) test_and_set(j);
  std::vector<std::uint32_t> out;
  out.reserve(static_cast<std::size_t>(k));
  for (std::size_t w = 0; w < taken.size(); ++w)
    for (std::uint64_t bits = taken[w]; bits != 0; bits &= bits - 1)
      out.push_back(static_cast<std::uint32_t>(w * 64 + static_cast<std::size_t>(__builtin_ctzll(bits))));
  return out;
}

class RandomK final : public Compressor {
 public:
  RandomK(SparsityBudget budget, bool shared) : budget_(budget), shared_(shared) {}

  std::uint64_t piece_bytes(const WirePiece& piece) const override {
    return static_cast<std::uint64_t>(budget_.on_wire(piece.shape.size())) *
           (shared_ ? kFloatBytes : kSparseEntryBytes);
  }
  bool summable() const override { return shared_; }
  bool unbiased() const override { return true; }
  bool shared_randomness() const override { return shared_; }
  double piece_encode_flops(const WirePiece& piece) const override {
    return static_cast<double>(piece.shape.size()) / 32 +
           4.0 * static_cast<double>(budget_.on_wire(piece.shape.size()));
  }
  double piece_decode_flops(const WirePiece& piece) const override { return piece_encode_flops(piece); }

 protected:
  Payload encode(const Eigen::Ref<const Eigen::VectorXf>& v, const TensorDesc& t, Rng& rng) override {
    const std::int64_t n = v.size(), k = budget_.on_proxy(n, t.wire);
    Payload p;
    p.seed = rng();  // the seed of this tensor's indices
    Rng draw(p.seed);
    const auto indices = sample_indices(n, k, draw);
    p.values.resize(k);
    for (std::int64_t i = 0; i < k; ++i) p.values[i] = v[indices[static_cast<std::size_t>(i)]];
    if (!shared_) p.indices = indices;
    p.wire_bytes = encoded_bytes(t.wire);
    return p;
  }
  Eigen::VectorXf decode(const Payload& p, const TensorDesc& t) const override {
    const std::int64_t n = t.proxy.size(), k = p.values.size();
    const float scale = static_cast<float>(static_cast<double>(n) / static_cast<double>(k));
    if (!shared_) return scatter(p.indices, p.values, n, scale);
    Rng draw(p.seed);
    return scatter(sample_indices(n, k, draw), p.values, n, scale);
  }

 private:
  SparsityBudget budget_;
  bool shared_;
};

}  // namespace

CompressorInfo randomk_compressor_entry() {
  auto specs = SparsityBudget::specs();
  specs.push_back(ParamSpec("shared_seed", ParamKind::boolean, "false",
                            "all ranks keep the same indices (only values travel; summable)"));
  return {"randomk", "k uniformly random coordinates scaled by d/k; unbiased; summable with shared_seed",
          specs, [](const Params& p) {
            return std::make_unique<RandomK>(SparsityBudget::from(p), p.boolean("shared_seed"));
          }};
}

}  // namespace aggsim
