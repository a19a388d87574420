#pragma once
// The least-squares line y = intercept + slope x through points, for tests that read a collective's
// per-call cost and rate off its times (t = a + S / B).
#include <cstddef>
#include <vector>

namespace aggsim::test {

struct Line {
  double intercept = 0, slope = 0;
};

inline Line least_squares_line(const std::vector<double>& x, const std::vector<double>& y) {
  const double n = static_cast<double>(x.size());
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    sx += x[i];
    sy += y[i];
    sxx += x[i] * x[i];
    sxy += x[i] * y[i];
  }
  const double slope = (n * sxy - sx * sy) / (n * sxx - sx * sx);
  return {(sy - slope * sx) / n, slope};
}

}  // namespace aggsim::test
