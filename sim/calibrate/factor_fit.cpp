#include "sim/calibrate/factor_fit.hpp"

#include <fmt/format.h>

#include <Eigen/Dense>
#include <cmath>
#include <limits>

namespace aggsim {

namespace {

std::string size_text(std::uint64_t b) {
  for (const auto& [unit, scale] :
       {std::pair{"GiB", 1ull << 30}, std::pair{"MiB", 1ull << 20}, std::pair{"KiB", 1ull << 10}})
    if (b >= scale && b % scale == 0) return fmt::format("{}{}", b / scale, unit);
  return fmt::format("{}B", b);
}

struct StepFit {
  double x = 1, y = 1;  // latency multiplier, 1 / bandwidth multiplier
  bool latency_free = false, bandwidth_free = false;
};

double residual(const std::vector<const ProbeRow*>& rows, double x, double y) {
  double r = 0;
  for (const auto* p : rows) {
    const double e = (x * p->latency_s + y * p->bandwidth_s) / p->measured_s - 1;
    r += e * e;
  }
  return r;
}

// Both multipliers when the step's points can tell them apart (positive solution), else the
// better of moving one alone with the other kept at 1.
StepFit fit_step(const std::vector<const ProbeRow*>& rows) {
  const auto n = static_cast<Eigen::Index>(rows.size());
  Eigen::MatrixXd a(n, 2);
  Eigen::VectorXd b = Eigen::VectorXd::Ones(n);
  for (Eigen::Index i = 0; i < n; ++i) {
    const ProbeRow& p = *rows[static_cast<std::size_t>(i)];
    a(i, 0) = p.latency_s / p.measured_s;
    a(i, 1) = p.bandwidth_s / p.measured_s;
  }
  std::vector<StepFit> candidates;
  if (n >= 2) {
    const Eigen::Vector2d s = a.colPivHouseholderQr().solve(b);
    if (s(0) > 0 && s(1) > 0 && std::isfinite(s(0)) && std::isfinite(s(1)))
      candidates.push_back({s(0), s(1), true, true});
  }
  // One column alone: x = (a0 . (b - a1)) / (a0 . a0), and the same for y. The part that dominates
  // the times goes first, so that it wins a tie (one point fits either way exactly).
  const double xx = a.col(0).squaredNorm(), yy = a.col(1).squaredNorm();
  std::vector<StepFit> single;
  if (xx > 0) {
    const double x = a.col(0).dot(b - a.col(1)) / xx;
    if (x > 0) single.push_back({x, 1, true, false});
  }
  if (yy > 0) {
    const double y = a.col(1).dot(b - a.col(0)) / yy;
    if (y > 0) single.insert(yy > xx ? single.begin() : single.end(), StepFit{1, y, false, true});
  }
  candidates.insert(candidates.end(), single.begin(), single.end());
  StepFit best;
  double best_r = std::numeric_limits<double>::infinity();
  for (const auto& c : candidates) {
    const double r = residual(rows, c.x, c.y);
    if (r < best_r - 1e-12) best_r = r, best = c;  // a tie keeps the earlier (dominant) candidate
  }
  return best;
}

}  // namespace

FactorFit fit_factors(const std::vector<ProbeRow>& rows, const std::vector<std::uint64_t>& edges,
                      const std::string& level) {
  std::vector<std::uint64_t> from = {0};
  from.insert(from.end(), edges.begin(), edges.end());
  std::vector<std::vector<const ProbeRow*>> by_step(from.size());
  for (const auto& r : rows) {
    std::size_t s = 0;
    while (s + 1 < from.size() && static_cast<double>(from[s + 1]) <= r.message_bytes) ++s;
    by_step[s].push_back(&r);
  }
  FactorFit fit;
  std::vector<StepFit> steps(from.size());
  std::vector<bool> has(from.size(), false);
  for (std::size_t s = 0; s < from.size(); ++s) {
    fit.points.push_back(static_cast<int>(by_step[s].size()));
    if (by_step[s].empty()) continue;
    steps[s] = fit_step(by_step[s]);
    has[s] = true;
  }
  const auto range = [&](std::size_t s) {
    return s + 1 < from.size() ? fmt::format("{} to {}", size_text(from[s]), size_text(from[s + 1]))
                               : fmt::format("from {}", size_text(from[s]));
  };
  for (std::size_t s = 0; s < from.size(); ++s) {
    if (has[s]) {
      if (!steps[s].latency_free)
        fit.notes.push_back(fmt::format(
            "{} messages {}: latency not identified (bandwidth explains the points); kept factor 1", level,
            range(s)));
      if (!steps[s].bandwidth_free)
        fit.notes.push_back(fmt::format(
            "{} messages {}: bandwidth not identified (latency explains the points); kept factor 1", level,
            range(s)));
      continue;
    }
    std::size_t nearest = from.size();
    for (std::size_t d = 1; d < from.size() && nearest == from.size(); ++d) {
      if (s + d < from.size() && has[s + d])
        nearest = s + d;  // prefer larger messages: closer to the protocol in use
      else if (s >= d && has[s - d])
        nearest = s - d;
    }
    steps[s] = steps[nearest];
    fit.notes.push_back(fmt::format("{} messages {}: no measured point; copied the factors of messages {}",
                                    level, range(s), range(nearest)));
  }
  for (std::size_t s = 0; s < from.size(); ++s)
    fit.table.steps.push_back({from[s], steps[s].x, 1 / steps[s].y});
  return fit;
}

}  // namespace aggsim
