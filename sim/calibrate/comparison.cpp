#include "sim/calibrate/comparison.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "sim/core/strings.hpp"

namespace aggsim {

double geometric_mean_error(const std::vector<ComparedPoint>& points) {
  if (points.empty()) return 0;
  double log_sum = 0;
  for (const auto& p : points) log_sum += std::log(std::max(1e-4, std::fabs(p.rel_error())));
  return std::exp(log_sum / static_cast<double>(points.size()));
}

std::string comparison_table(const std::vector<ComparedPoint>& points) {
  std::string out;
  std::string group;
  for (const auto& p : points) {
    const Measurement& m = p.measured;
    const std::string g =
        fmt::format("{} on {} ranks, {} node{}", m.collective, m.ranks, m.nodes, m.nodes > 1 ? "s" : "");
    if (g != group) {
      group = g;
      out += fmt::format("# {}\n#{:>40}{:>30}\n", g, "measured", "simulated");
      out += fmt::format("#{:>13} {:>10} {:>8} {:>8} {:>10} {:>8} {:>8} {:>8}  {}\n", "size", "time", "algbw",
                         "busbw", "time", "algbw", "busbw", "error", "choice");
      out += fmt::format("#{:>13} {:>10} {:>8} {:>8} {:>10} {:>8} {:>8} {:>8}\n", "(B)", "(us)", "(GB/s)",
                         "(GB/s)", "(us)", "(GB/s)", "(GB/s)", "(%)");
    }
    const double factor = bus_bandwidth_factor(m.collective, m.ranks);
    const auto algbw = [&](double t) { return static_cast<double>(m.bytes) / t / 1e9; };
    // Outside what the calibration measured: the size (range?) or the NCCL choice (choice?).
    std::string marks = p.choice;
    if (p.in_measured_range == 0) marks += " range?";
    if (p.choice_observed == 0) marks += " choice?";
    out +=
        fmt::format(" {:>13} {:>10.2f} {:>8.2f} {:>8.2f} {:>10.2f} {:>8.2f} {:>8.2f} {:>+8.1f}  {}\n",
                    m.bytes, m.time_s * 1e6, algbw(m.time_s), algbw(m.time_s) * factor, p.simulated_s * 1e6,
                    algbw(p.simulated_s), algbw(p.simulated_s) * factor, 100 * p.rel_error(), marks);
  }
  if (std::any_of(points.begin(), points.end(),
                  [](const ComparedPoint& p) { return p.in_measured_range == 0 || p.choice_observed == 0; }))
    out +=
        "# range?: size outside the calibration's measured sizes; choice?: an NCCL algorithm/protocol its "
        "data never showed\n";
  out += fmt::format("# geometric-mean error: {:.1f} % over {} point{}\n", 100 * geometric_mean_error(points),
                     points.size(), points.size() == 1 ? "" : "s");
  return out;
}

std::string comparison_csv(const std::vector<ComparedPoint>& points) {
  std::string out =
      "collective,ranks,nodes,bytes,measured_s,simulated_s,rel_error,choice,in_measured_range,choice_"
      "observed\n";
  const auto flag = [](int f) { return f < 0 ? std::string() : fmt::format("{}", f); };
  for (const auto& p : points)
    out += csv_row({p.measured.collective, fmt::format("{}", p.measured.ranks),
                    fmt::format("{}", p.measured.nodes), fmt::format("{}", p.measured.bytes),
                    fmt::format("{:.9g}", p.measured.time_s), fmt::format("{:.9g}", p.simulated_s),
                    fmt::format("{:.6f}", p.rel_error()), p.choice, flag(p.in_measured_range),
                    flag(p.choice_observed)});
  return out;
}

}  // namespace aggsim
