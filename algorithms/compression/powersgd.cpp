// PowerSGD (Vogels et al. 2019) as a compressor: one step of power iteration on the gradient viewed
// as an m x n matrix M: P = M Q, orthogonalise P (Gram-Schmidt), Q = M^T P; M ~ P Q^T. With
// `reuse_query` Q starts from the previous step's Q (warm start), so repeated steps converge to the
// top-r subspace. Encoding: P and Q in fp32, (m + n) r * 4 bytes per modeled m x n matrix; 1-D
// vectors (biases, norm parameters) and matrices where that is not smaller than m n go dense, and a
// flat tensor of unknown structure is viewed as a near-square matrix. The math follows the same
// rule on the proxy's own tensors (Gradient::proxy_layout): each proxy matrix gets its own P, Q and
// warm start, as PyTorch's hook factors each parameter tensor, and proxy vectors go dense; a proxy
// without tensor structure (synthetic, a parameter server's shard) is one near-square matrix.
// On reducing collectives PowerSGD is its own aggregation (the powersgd_aggregation transport,
// algorithms/transport/power_aggregation): all-reduce P, orthogonalise, all-reduce Q. This
// compressor serves the other transports.
#include "algorithms/compression/powersgd.hpp"

#include "algorithms/compression/low_rank.hpp"
#include "algorithms/registry.hpp"

namespace aggsim {

Eigen::MatrixXf QueryStore::start(std::uint64_t id, std::size_t piece, Eigen::Index n, Rng& rng) {
  auto it = queries_.find({id, piece});
  if (options_.reuse_query && it != queries_.end() && it->second.rows() == n) return it->second;
  Eigen::MatrixXf q(n, options_.rank);
  for (Eigen::Index i = 0; i < q.size(); ++i) q.data()[i] = static_cast<float>(standard_normal(rng));
  return q;
}

void QueryStore::keep(std::uint64_t id, std::size_t piece, const Eigen::MatrixXf& q) {
  if (options_.reuse_query) queries_[{id, piece}] = q;
}

namespace {

class PowerSgd final : public Compressor {
 public:
  explicit PowerSgd(PowerSgdOptions options) : queries_(options) {}

  std::uint64_t piece_bytes(const WirePiece& piece) const override {
    const Shape view = matrix_view(piece.shape);
    const std::int64_t r = queries_.options().rank;
    return kFloatBytes * static_cast<std::uint64_t>(low_rank_pays(piece, r) ? (view.rows + view.cols) * r
                                                                            : piece.shape.size());
  }
  // Two all-reducible factors; PowerSGD's own aggregation does the adding (see power_aggregation).
  bool summable() const override { return true; }
  bool unbiased() const override { return false; }
  // Pieces sent dense cost nothing to encode or decode.
  double piece_encode_flops(const WirePiece& piece) const override {
    const Shape v = matrix_view(piece.shape);
    const std::int64_t r = queries_.options().rank;
    return low_rank_pays(piece, r) ? 2 * matmul_flops(v.rows, v.cols, r) + matmul_flops(v.rows, r, r) : 0.0;
  }
  double piece_decode_flops(const WirePiece& piece) const override {
    const Shape v = matrix_view(piece.shape);
    const std::int64_t r = queries_.options().rank;
    return low_rank_pays(piece, r) ? matmul_flops(v.rows, v.cols, r) : 0.0;
  }

 protected:
  // Per proxy tensor (low_rank_pieces): a factored one adds its P (m x r) then its Q (n x r) to
  // the payload, a dense one its values.
  Payload encode(const Eigen::Ref<const Eigen::VectorXf>& v, const TensorDesc& t, Rng& rng) override {
    Payload p;
    p.wire_bytes = encoded_bytes(t.wire);
    const std::int64_t r = queries_.options().rank;
    const std::vector<LowRankPiece> pieces = low_rank_pieces(t.proxy, t.proxy_layout, r);
    Eigen::Index size = 0;
    for (const LowRankPiece& piece : pieces)
      size += piece.factored ? (piece.view.rows + piece.view.cols) * r : piece.count;
    p.values.resize(size);
    Eigen::Index at = 0;
    for (std::size_t i = 0; i < pieces.size(); ++i) {
      const LowRankPiece& piece = pieces[i];
      const auto values = v.segment(piece.offset, piece.count);
      if (!piece.factored) {
        p.values.segment(at, piece.count) = values;
        at += piece.count;
        continue;
      }
      const Eigen::MatrixXf m = to_matrix(values, piece.view);
      Eigen::MatrixXf q = queries_.start(t.id, i, piece.view.cols, rng);
      Eigen::MatrixXf pm = m * q;
      orthogonalize(pm);
      q.noalias() = m.transpose() * pm;
      queries_.keep(t.id, i, q);
      p.values.segment(at, pm.size()) = Eigen::Map<const Eigen::VectorXf>(pm.data(), pm.size());
      at += pm.size();
      p.values.segment(at, q.size()) = Eigen::Map<const Eigen::VectorXf>(q.data(), q.size());
      at += q.size();
    }
    return p;
  }
  Eigen::VectorXf decode(const Payload& p, const TensorDesc& t) const override {
    const std::int64_t r = queries_.options().rank;
    Eigen::VectorXf out(t.proxy.size());
    Eigen::Index at = 0;
    for (const LowRankPiece& piece : low_rank_pieces(t.proxy, t.proxy_layout, r)) {
      if (!piece.factored) {
        out.segment(piece.offset, piece.count) = p.values.segment(at, piece.count);
        at += piece.count;
        continue;
      }
      const Eigen::Map<const Eigen::MatrixXf> pm(p.values.data() + at, piece.view.rows, r);
      at += piece.view.rows * r;
      const Eigen::Map<const Eigen::MatrixXf> q(p.values.data() + at, piece.view.cols, r);
      at += piece.view.cols * r;
      const Eigen::MatrixXf m = pm * q.transpose();
      out.segment(piece.offset, piece.count) = from_matrix(m, piece.count);
    }
    return out;
  }

 private:
  QueryStore queries_;
};

}  // namespace

PowerSgdOptions powersgd_options(const Params& p) {
  return {p.integer("rank"), p.boolean("reuse_query")};
}

CompressorInfo powersgd_compressor_entry() {
  CompressorInfo info{
      "powersgd",
      "rank-r power iteration (P, Q factors); on reducing collectives: all-reduce P, then Q",
      {ParamSpec("rank", ParamKind::integer, "2", "rank r of the approximation").between(1, 4096),
       ParamSpec("reuse_query", ParamKind::boolean, "true",
                 "warm start: begin each step's power iteration from the previous Q")},
      [](const Params& p) { return std::make_unique<PowerSgd>(powersgd_options(p)); }};
  info.reducing_transport = "powersgd_aggregation";
  return info;
}

}  // namespace aggsim
