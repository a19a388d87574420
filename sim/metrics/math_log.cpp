#include "sim/metrics/math_log.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace aggsim {

MathLog::MathLog(int steps, ExactReduction rule, std::vector<bool> contributes)
    : rule_(rule),
      contributes_(std::move(contributes)),
      ranks_(static_cast<int>(contributes_.size())),
      done_(static_cast<std::size_t>(steps)) {}

void MathLog::report(int rank, int step, const Eigen::VectorXf& input, const Eigen::VectorXf& result,
                     const CompressionTally& compression) {
  if (step < 0 || step >= static_cast<int>(done_.size()) || rank < 0 || rank >= ranks_)
    throw std::out_of_range("math log: rank or step out of range");
  Pending& p = pending_[step];
  Report r;
  r.contributes = contributes_[static_cast<std::size_t>(rank)];
  if (r.contributes) r.input = input, r.result = result;
  r.compression = compression;
  p.order.add(rank, std::move(r), [&](Report& in_order) { fold(p, in_order); });
  if (p.order.folded() == ranks_) {
    complete(step, p);
    pending_.erase(step);
  }
}

void MathLog::fold(Pending& p, Report& r) const {
  if (r.contributes) {
    const Eigen::VectorXd in = r.input.cast<double>();
    if (p.exact.size() == 0) {
      p.exact = in;
    } else if (rule_.kind == ExactReduction::Kind::add) {
      p.exact += in;
    } else if (rule_.kind == ExactReduction::Kind::min) {
      p.exact = p.exact.cwiseMin(in);
    } else {
      p.exact = p.exact.cwiseMax(in);
    }
    p.results.push_back(std::move(r.result));
  }
  const CompressionTally& c = r.compression;
  if (c.encodings > 0) {
    p.compress_sum += c.norm_sq > 0 ? std::sqrt(c.error_sq / c.norm_sq) : 0.0;
    ++p.compressing;
  }
}

void MathLog::complete(int step, Pending& p) {
  if (p.results.empty() || p.exact.size() == 0) return;
  StepMath m;
  Eigen::VectorXd exact = p.exact;
  if (rule_.kind == ExactReduction::Kind::add) exact /= rule_.divisor;
  Eigen::VectorXd mean = Eigen::VectorXd::Zero(exact.size());
  for (const auto& x : p.results) mean += x.cast<double>();
  mean /= static_cast<double>(p.results.size());
  // Relative to the exact reduction; absolute where it is zero.
  const double exact_sq = exact.squaredNorm();
  const Eigen::VectorXd diff = mean - exact;
  m.agg_error = exact_sq > 0 ? diff.norm() / std::sqrt(exact_sq) : diff.norm();
  m.agg_signed_error = exact_sq > 0 ? diff.dot(exact) / exact_sq : 0.0;
  const double mean_norm = mean.norm();
  for (const auto& x : p.results) {
    const double d = (x.cast<double>() - mean).norm();
    m.rank_spread = std::max(m.rank_spread, mean_norm > 0 ? d / mean_norm : d);
  }
  m.compress_error = p.compressing > 0 ? p.compress_sum / p.compressing : 0.0;
  done_[static_cast<std::size_t>(step)] = m;
}

std::vector<std::optional<StepMath>> MathLog::steps() const {
  return done_;
}

}  // namespace aggsim
