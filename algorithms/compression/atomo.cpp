// ATOMO (Wang et al. 2018) with SVD atoms: M = sum_i sigma_i u_i v_i^T; atom i is kept with
// probability p_i (variance-minimising under the budget: sum p_i = s) and scaled by 1/p_i, so the
// result is unbiased and the expected number of atoms is s. Encoding per kept atom: u (m fp32),
// v (n fp32) and sigma_i / p_i: (m + n + 1) * 4 bytes. The kept count is random: encoded_bytes()
// uses the expected count min(s, min(m, n)) per modeled matrix, payload.wire_bytes scales it by the
// proxy's actual / expected count (exactly the actual count when the shapes coincide). 1-D vectors
// (biases, norm parameters) travel dense, 4 n bytes: ATOMO's reference reshapes them to n/2 x 2,
// whose at most 2 atoms, all kept once s >= 2, cost about as much. Flat tensors of unknown
// structure are viewed as near-square matrices (low_rank.hpp). The SVD is Eigen's BDCSVD.
#include "algorithms/compression/atomo.hpp"

#include <Eigen/SVD>
#include <numeric>

#include "algorithms/compression/low_rank.hpp"
#include "algorithms/registry.hpp"

namespace aggsim {

std::vector<double> atomo_probabilities(const std::vector<double>& sigma, double budget) {
  std::vector<std::size_t> order(sigma.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return sigma[a] > sigma[b]; });
  std::vector<double> p(sigma.size(), 0.0);
  double rest = 0;
  for (double s : sigma) rest += s;
  double left = budget;
  for (std::size_t k = 0; k < order.size() && rest > 0 && left > 0; ++k) {
    const double s = sigma[order[k]];
    if (left * s >= rest) {  // would reach 1: keep this atom surely and spread the rest further down
      p[order[k]] = 1.0;
      left -= 1.0;
      rest -= s;
      continue;
    }
    for (std::size_t j = k; j < order.size(); ++j) p[order[j]] = left * sigma[order[j]] / rest;
    break;
  }
  return p;
}

namespace {

class Atomo final : public Compressor {
 public:
  explicit Atomo(double budget) : budget_(budget) {}

  std::uint64_t piece_bytes(const WirePiece& piece) const override {
    return static_cast<std::uint64_t>(std::llround(expected_piece_bytes(piece)));
  }
  bool summable() const override { return false; }
  bool unbiased() const override { return true; }
  // Thin SVD ~ 4 m n min(m, n); decoding adds the kept outer products. Dense vectors cost nothing.
  double piece_encode_flops(const WirePiece& piece) const override {
    const Shape v = matrix_view(piece.shape);
    return piece.vector ? 0.0 : 2 * matmul_flops(v.rows, v.cols, std::min(v.rows, v.cols));
  }
  double piece_decode_flops(const WirePiece& piece) const override {
    const Shape v = matrix_view(piece.shape);
    return piece.vector ? 0.0 : budget_ * matmul_flops(v.rows, v.cols, 1);
  }

 protected:
  Payload encode(const Eigen::Ref<const Eigen::VectorXf>& v, const TensorDesc& t, Rng& rng) override {
    const Shape view = matrix_view(t.proxy);
    const Eigen::BDCSVD<Eigen::MatrixXf> svd(to_matrix(v, view), Eigen::ComputeThinU | Eigen::ComputeThinV);
    const Eigen::VectorXf& sigma = svd.singularValues();
    const auto p =
        atomo_probabilities(std::vector<double>(sigma.data(), sigma.data() + sigma.size()), budget_);
    std::vector<Eigen::Index> kept;
    for (Eigen::Index i = 0; i < sigma.size(); ++i)
      if (uniform01(rng) < p[static_cast<std::size_t>(i)]) kept.push_back(i);
    const auto count = static_cast<Eigen::Index>(kept.size());
    Payload out;
    out.values.resize(count * (view.rows + view.cols));
    out.scales.resize(count);
    for (Eigen::Index k = 0; k < count; ++k) {
      const Eigen::Index i = kept[static_cast<std::size_t>(k)];
      out.values.segment(k * (view.rows + view.cols), view.rows) = svd.matrixU().col(i);
      out.values.segment(k * (view.rows + view.cols) + view.rows, view.cols) = svd.matrixV().col(i);
      out.scales[k] = static_cast<float>(sigma[i] / p[static_cast<std::size_t>(i)]);
    }
    out.wire_bytes = wire_bytes(t.wire, static_cast<double>(count), expected_atoms(view));
    return out;
  }
  Eigen::VectorXf decode(const Payload& p, const TensorDesc& t) const override {
    const Shape view = matrix_view(t.proxy);
    Eigen::MatrixXf m = Eigen::MatrixXf::Zero(view.rows, view.cols);
    for (Eigen::Index k = 0; k < p.scales.size(); ++k) {
      const auto u = p.values.segment(k * (view.rows + view.cols), view.rows);
      const auto w = p.values.segment(k * (view.rows + view.cols) + view.rows, view.cols);
      m.noalias() += p.scales[k] * u * w.transpose();
    }
    return from_matrix(m, t.proxy.size());
  }

 private:
  static std::uint64_t atom_bytes(const Shape& view) {
    return kFloatBytes * static_cast<std::uint64_t>(view.rows + view.cols + 1);
  }
  double expected_atoms(const Shape& view) const {
    return std::min(budget_, static_cast<double>(std::min(view.rows, view.cols)));
  }
  // Vectors travel dense (4 n bytes); a matrix sends its expected number of atoms.
  double expected_piece_bytes(const WirePiece& piece) const {
    if (piece.vector)
      return static_cast<double>(kFloatBytes * static_cast<std::uint64_t>(piece.shape.size()));
    const Shape view = matrix_view(piece.shape);
    return expected_atoms(view) * static_cast<double>(atom_bytes(view));
  }
  // The proxy kept `count` atoms where `expected` were expected: each modeled matrix sends that
  // proportion of its expected atoms (exactly `count` atoms when the shapes coincide).
  std::uint64_t wire_bytes(const WireLayout& wire, double count, double expected) const {
    double bytes = 0;
    for (const WirePiece& piece : wire.pieces)
      bytes += piece.vector ? expected_piece_bytes(piece) : expected_piece_bytes(piece) * count / expected;
    return static_cast<std::uint64_t>(std::llround(bytes));
  }
  double budget_;
};

}  // namespace

CompressorInfo atomo_compressor_entry() {
  CompressorInfo info{
      "atomo",
      "SVD atoms sampled with variance-minimising probabilities, expected `budget` atoms; unbiased",
      {ParamSpec("budget", ParamKind::real, "3", "sparsity budget s: expected number of atoms sent")
           .at_least(1e-9)},
      [](const Params& p) { return std::make_unique<Atomo>(p.real("budget")); }};
  info.sizes_depend_on_data = true;  // the number of atoms kept is drawn each step
  return info;
}

}  // namespace aggsim
