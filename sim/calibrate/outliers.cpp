#include "sim/calibrate/outliers.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <tuple>

namespace aggsim {

namespace {

std::string file_of(const Measurement& m) {
  return m.source.substr(0, m.source.rfind(':'));
}

std::string microseconds(double seconds) {
  return fmt::format("{:.4g} us", seconds * 1e6);
}

// The points of one run (indices sorted by size) slower than the fastest larger size by more than
// the tolerance, each named with that size.
std::vector<MonotonicOutlier> run_outliers(const std::vector<Measurement>& measured,
                                           const std::vector<std::size_t>& run) {
  std::vector<MonotonicOutlier> out;
  const Measurement* fastest = nullptr;  // the fastest point of the sizes above the group at hand
  for (std::size_t hi = run.size(); hi > 0;) {
    std::size_t lo = hi - 1;  // [lo, hi): the points of one size
    while (lo > 0 && measured[run[lo - 1]].bytes == measured[run[hi - 1]].bytes) --lo;
    for (std::size_t k = lo; k < hi; ++k) {
      const Measurement& m = measured[run[k]];
      if (fastest && m.time_s > fastest->time_s * (1 + kMonotonicTolerance))
        out.push_back({run[k], fmt::format("slower than {} ({})", fastest->bytes, microseconds(fastest->time_s))});
    }
    for (std::size_t k = lo; k < hi; ++k)
      if (!fastest || measured[run[k]].time_s < fastest->time_s) fastest = &measured[run[k]];
    hi = lo;
  }
  return out;
}

}  // namespace

std::vector<MonotonicOutlier> monotonic_outliers(const std::vector<Measurement>& measured) {
  std::map<std::tuple<std::string, std::string, int, int>, std::vector<std::size_t>> runs;
  for (std::size_t i = 0; i < measured.size(); ++i) {
    const Measurement& m = measured[i];
    runs[{file_of(m), m.collective, m.ranks, m.nodes}].push_back(i);
  }
  std::vector<MonotonicOutlier> out;
  for (auto& [key, run] : runs) {
    std::stable_sort(run.begin(), run.end(),
                     [&](std::size_t a, std::size_t b) { return measured[a].bytes < measured[b].bytes; });
    for (auto& o : run_outliers(measured, run)) out.push_back(o);
  }
  std::sort(out.begin(), out.end(),
            [](const MonotonicOutlier& a, const MonotonicOutlier& b) { return a.index < b.index; });
  return out;
}

std::string outlier_line(const Measurement& m, const std::string& why) {
  return fmt::format("{}: {}: {}, {}", m.source, m.bytes, microseconds(m.time_s), why);
}

}  // namespace aggsim
