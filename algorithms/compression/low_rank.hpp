#pragma once
// Matrix views and helpers shared by the low-rank compressors (PowerSGD, ATOMO) and PowerSGD's
// aggregation. Values are read column-major into the matrix view.
#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "sim/api/aggregator.hpp"

namespace aggsim {

// A tensor as a matrix: its own shape when it is one (cols > 1); a flat vector as a near-square
// ceil(sqrt n) x ceil(n / rows) matrix, zero-padded (PowerSGD and GRACE reshape tensors to 2-D too).
inline Shape matrix_view(const Shape& s) {
  if (s.cols > 1 || s.rows <= 1) return s;
  const auto rows = static_cast<std::int64_t>(std::ceil(std::sqrt(static_cast<double>(s.rows))));
  return {rows, (s.rows + rows - 1) / rows};
}

inline Eigen::MatrixXf to_matrix(const Eigen::Ref<const Eigen::VectorXf>& v, const Shape& view) {
  Eigen::MatrixXf m = Eigen::MatrixXf::Zero(view.rows, view.cols);
  Eigen::Map<Eigen::VectorXf>(m.data(), v.size()) = v;
  return m;
}

inline Eigen::VectorXf from_matrix(const Eigen::MatrixXf& m, Eigen::Index n) {
  return Eigen::Map<const Eigen::VectorXf>(m.data(), n);
}

// Modified Gram-Schmidt on the columns, in place (PowerSGD's orthogonalisation). A column that
// vanishes stays (near) zero instead of dividing by zero.
inline void orthogonalize(Eigen::MatrixXf& p) {
  for (Eigen::Index j = 0; j < p.cols(); ++j) {
    for (Eigen::Index i = 0; i < j; ++i) p.col(j) -= p.col(i).dot(p.col(j)) * p.col(i);
    const float norm = p.col(j).norm();
    p.col(j) /= norm + 1e-30f;
  }
}

// Rank-r factors P (m x r) and Q (n x r) of an m x n view: (m + n) r fp32 values, unless that is
// no smaller than the dense matrix (vectors, tiny layers), which PowerSGD sends uncompressed.
inline bool low_rank_pays(const Shape& view, std::int64_t r) {
  return (view.rows + view.cols) * r < view.size();
}
// A modeled piece: 1-D vectors (biases, norm parameters) never pay; they travel dense, as in
// PowerSGD's reference implementation, PyTorch's PowerSGD hook and mlbench's PowerAggregation,
// which all-reduce rank-1 tensors uncompressed.
inline bool low_rank_pays(const WirePiece& piece, std::int64_t r) {
  return !piece.vector && low_rank_pays(matrix_view(piece.shape), r);
}

// A modeled tensor under rank-r PowerSGD: the pieces whose factors pay add up to sum m_i rows of P
// and sum n_i rows of Q (sum m_i n_i sets the cost of the products); the other pieces travel dense.
struct LowRankWire {
  std::int64_t rows = 0, cols = 0, dense = 0;
  double area = 0;
};

inline LowRankWire low_rank_wire(const WireLayout& wire, std::int64_t r) {
  LowRankWire w;
  for (const WirePiece& piece : wire.pieces) {
    const Shape view = matrix_view(piece.shape);
    if (!low_rank_pays(piece, r)) {
      w.dense += piece.shape.size();
      continue;
    }
    w.rows += view.rows;
    w.cols += view.cols;
    w.area += static_cast<double>(view.rows) * static_cast<double>(view.cols);
  }
  return w;
}

// One proxy tensor under rank-r PowerSGD: `count` values from `offset`, viewed as `view`, and
// whether its factors are sent (`factored`) or its values go dense, by the same rule as the wire's
// pieces (low_rank_pays of a WirePiece).
struct LowRankPiece {
  std::int64_t offset = 0, count = 0;
  Shape view;
  bool factored = false;
};

// The proxy's tensors (`layout`, as Gradient::proxy_layout) one by one, as PyTorch's PowerSGD hook
// and mlbench's PowerAggregation treat each parameter tensor. A proxy without structure (empty
// layout) is one piece: `proxy` viewed by matrix_view (near-square when flat). Empty with math off.
inline std::vector<LowRankPiece> low_rank_pieces(const Shape& proxy, const WireLayout& layout,
                                                 std::int64_t r) {
  std::vector<LowRankPiece> out;
  if (proxy.size() == 0) return out;
  if (layout.pieces.empty()) {
    const Shape view = matrix_view(proxy);
    out.push_back({0, proxy.size(), view, low_rank_pays(view, r)});
    return out;
  }
  std::int64_t at = 0;
  for (const WirePiece& piece : layout.pieces) {
    out.push_back({at, piece.shape.size(), matrix_view(piece.shape), low_rank_pays(piece, r)});
    at += piece.shape.size();
  }
  return out;
}

inline double matmul_flops(std::int64_t m, std::int64_t n, std::int64_t r) {
  return 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(r);
}

}  // namespace aggsim
