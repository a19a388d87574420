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

// `earlier` (a smaller size) may precede `later` in a run's non-decreasing times.
bool in_order(const Measurement& earlier, const Measurement& later) {
  return earlier.time_s <= later.time_s * (1 + kMonotonicTolerance);
}

std::string us(double seconds) {
  return fmt::format("{:.4g} us", seconds * 1e6);
}

// The points of one run (indices sorted by size) to drop: the complement of its longest chain of
// non-decreasing times, preferring to keep larger sizes (a warm-up slows the first, smallest ones).
std::vector<MonotonicOutlier> run_outliers(const std::vector<Measurement>& measured,
                                           const std::vector<std::size_t>& run) {
  const std::size_t n = run.size();
  std::vector<int> longest(n, 1), before(n, -1);
  for (std::size_t j = 0; j < n; ++j)
    for (std::size_t i = 0; i < j; ++i)
      if (in_order(measured[run[i]], measured[run[j]]) && longest[i] + 1 >= longest[j])
        longest[j] = longest[i] + 1, before[j] = static_cast<int>(i);
  int end = 0;
  for (std::size_t j = 0; j < n; ++j)
    if (longest[j] >= longest[static_cast<std::size_t>(end)]) end = static_cast<int>(j);
  std::vector<bool> kept(n, false);
  for (int j = n == 0 ? -1 : end; j >= 0; j = before[static_cast<std::size_t>(j)])
    kept[static_cast<std::size_t>(j)] = true;
  std::vector<MonotonicOutlier> out;
  for (std::size_t d = 0; d < n; ++d) {
    if (kept[d]) continue;
    const Measurement& m = measured[run[d]];
    std::string why = "out of order with the sizes around it";
    for (std::size_t k = d + 1; k < n; ++k)
      if (kept[k] && !in_order(m, measured[run[k]])) {
        why = fmt::format("slower than {} ({})", measured[run[k]].bytes, us(measured[run[k]].time_s));
        break;
      }
    for (std::size_t k = d; k-- > 0 && why.rfind("out of", 0) == 0;)
      if (kept[k] && !in_order(measured[run[k]], m))
        why = fmt::format("faster than {} ({})", measured[run[k]].bytes, us(measured[run[k]].time_s));
    out.push_back({run[d], why});
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
  return fmt::format("{}: {}: {}, {}", m.source, m.bytes, us(m.time_s), why);
}

}  // namespace aggsim
