#include "sim/metrics/math_log.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "sim/core/same_bits.hpp"

namespace aggsim {

MathLog::MathLog(int steps, ExactReduction rule, std::vector<bool> contributes)
    : rule_(rule),
      contributes_(std::move(contributes)),
      ranks_(static_cast<int>(contributes_.size())),
      done_(static_cast<std::size_t>(steps)) {}

MathLog::Pending& MathLog::pending(int rank, int step) {
  if (step < 0 || step >= static_cast<int>(done_.size()) || rank < 0 || rank >= ranks_)
    throw std::out_of_range("math log: rank or step out of range");
  return pending_[step];
}

void MathLog::report_input(int rank, int step, const Eigen::VectorXf& input) {
  Pending& p = pending(rank, step);
  Input in;
  in.contributes = contributes_[static_cast<std::size_t>(rank)];
  if (in.contributes) {
    if (rank == p.inputs.folded())
      in.borrowed = &input;  // add() folds it before returning
    else
      in.copy = input;
  }
  p.inputs.add(rank, std::move(in), [&](const Input& in_order) { fold_input(p, in_order); });
  complete_if_done(step, p);
}

void MathLog::report_result(int rank, int step, const Eigen::VectorXf& result,
                            const CompressionTally& compression) {
  Pending& p = pending(rank, step);
  Result r;
  if (contributes_[static_cast<std::size_t>(rank)]) {
    r.values = share_if_same(p.first, result);
  }
  r.compression = compression;
  p.results_in_order.add(rank, std::move(r), [&](Result& in_order) { fold_result(p, in_order); });
  complete_if_done(step, p);
}

void MathLog::fold_input(Pending& p, const Input& in) const {
  if (!in.contributes) return;
  // Cast inside each expression: no temporary vector per rank and step.
  const auto x = in.values().cast<double>();
  if (p.exact.size() == 0) {
    p.exact = x;
  } else if (rule_.kind == ExactReduction::Kind::add) {
    p.exact += x;
  } else if (rule_.kind == ExactReduction::Kind::min) {
    p.exact = p.exact.cwiseMin(x);
  } else {
    p.exact = p.exact.cwiseMax(x);
  }
}

void MathLog::fold_result(Pending& p, Result& r) const {
  if (r.values) {
    if (!p.results.empty() &&
        (p.results.back().first == r.values || same_bits(*p.results.back().first, *r.values)))
      ++p.results.back().second;
    else
      p.results.emplace_back(std::move(r.values), 1);
  }
  const CompressionTally& c = r.compression;
  if (c.encodings > 0) {
    p.compress_sum += c.norm_sq > 0 ? std::sqrt(c.error_sq / c.norm_sq) : 0.0;
    ++p.compressing;
  }
}

void MathLog::complete_if_done(int step, Pending& p) {
  if (p.inputs.folded() < ranks_ || p.results_in_order.folded() < ranks_) return;
  complete(step, p);
  pending_.erase(step);
}

void MathLog::complete(int step, Pending& p) {
  if (p.results.empty() || p.exact.size() == 0) return;
  StepMath m;
  Eigen::VectorXd exact = p.exact;
  if (rule_.kind == ExactReduction::Kind::add) exact /= rule_.divisor;
  Eigen::VectorXd mean = Eigen::VectorXd::Zero(exact.size());
  int results = 0;
  if (p.results.size() == 1 && p.results.front().second < (1 << 29)) {
    // Every rank ended with the same floats: a float has 24 significant bits, so each partial sum
    // i x of the rank-by-rank loop below is exact in a double (i < 2^29), and so is this product.
    // Added to zero as the loop's first step is, so a -0 comes out +0 as there.
    results = p.results.front().second;
    mean += p.results.front().first->cast<double>() * static_cast<double>(results);
  } else {
    for (const auto& [x, ranks] : p.results) {
      for (int i = 0; i < ranks; ++i) mean += x->cast<double>();  // rank by rank: the same rounding
      results += ranks;
    }
  }
  mean /= static_cast<double>(results);
  // Relative to the exact reduction; absolute where it is zero.
  const double exact_sq = exact.squaredNorm();
  const Eigen::VectorXd diff = mean - exact;
  m.agg_error = exact_sq > 0 ? diff.norm() / std::sqrt(exact_sq) : diff.norm();
  m.agg_signed_error = exact_sq > 0 ? diff.dot(exact) / exact_sq : 0.0;
  const double mean_norm = mean.norm();
  for (const auto& [x, ranks] : p.results) {
    const double d = (x->cast<double>() - mean).norm();
    m.rank_spread = std::max(m.rank_spread, mean_norm > 0 ? d / mean_norm : d);
  }
  m.compress_error = p.compressing > 0 ? p.compress_sum / p.compressing : 0.0;
  done_[static_cast<std::size_t>(step)] = m;
}

std::vector<std::optional<StepMath>> MathLog::steps() const {
  return done_;
}

}  // namespace aggsim
