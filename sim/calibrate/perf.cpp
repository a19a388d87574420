#include "sim/calibrate/perf.hpp"

#include <fmt/format.h>

#include <cmath>

#include "sim/calibrate/calibrate.hpp"
#include "sim/calibrate/measurement.hpp"
#include "sim/calibrate/point_plan.hpp"
#include "sim/calibrate/point_runner.hpp"
#include "sim/core/error.hpp"
#include "sim/core/strings.hpp"
#include "sim/scenario/scenario_loader.hpp"

namespace aggsim {

namespace {

// Nodes the scenario's ranks occupy: a generated platform's gpus_per_node, else one rank a node
// (a platform file's nodes are its own; the count only labels the table there).
int nodes_of(const Scenario& sc) {
  if (!sc.platform.generator) return sc.ranks;
  const auto g = static_cast<int>(sc.platform.shape.gpus_per_node);
  return (sc.ranks + g - 1) / g;
}

bool per_rank_count(const std::string& collective) {
  return collective == "all_gather" || collective == "reduce_scatter";
}

}  // namespace

std::vector<std::uint64_t> perf_sizes(const PerfOptions& o, int ranks) {
  // Counted before any is made: a factor a hair above 1 would otherwise multiply for ever.
  const double steps = std::floor(std::log(static_cast<double>(o.max_bytes) / static_cast<double>(o.min_bytes)) /
                                  std::log(o.factor));
  if (o.factor > 1 && steps > kMaxPerfSteps)
    throw InputError(fmt::format("--factor: {} takes {:.3g} steps from {} to {} B; aggsim perf takes at most {} "
                                 "(and simulates at most {} sizes): use a larger --factor",
                                 o.factor, steps, o.min_bytes, o.max_bytes, kMaxPerfSteps, kMaxPerfSizes));
  const std::uint64_t unit = per_rank_count(o.collective) ? 4ull * static_cast<std::uint64_t>(ranks) : 4;
  std::vector<std::uint64_t> sizes;
  double size = static_cast<double>(o.min_bytes);
  while (size <= static_cast<double>(o.max_bytes) * (1 + 1e-12)) {
    // Sizes beyond 2^63 are not whole byte counts (--max is below it; rounding up may pass it).
    const auto bytes = size < 9223372036854775808.0 ? static_cast<std::uint64_t>(size) / unit * unit : 0;
    if (bytes > 0 && (sizes.empty() || bytes != sizes.back())) sizes.push_back(bytes);
    if (sizes.size() > kMaxPerfSizes)
      throw InputError(fmt::format("--min, --max, --factor: more than {} sizes from {} to {} B by {}; aggsim "
                                   "perf simulates at most {} per run: use a larger --factor or a narrower range",
                                   kMaxPerfSizes, o.min_bytes, o.max_bytes, o.factor, kMaxPerfSizes));
    if (o.factor <= 1) break;
    size *= o.factor;
  }
  return sizes;
}

PerfTable perf(const PerfOptions& o) {
  collective_option(o.collective);
  if (o.min_bytes == 0 || o.max_bytes < o.min_bytes)
    throw InputError(fmt::format("--min, --max: sizes must satisfy 0 < min <= max (got {} and {})",
                                 o.min_bytes, o.max_bytes));
  if (!(o.factor > 1) || !std::isfinite(o.factor))
    throw InputError(fmt::format("--factor: must be above 1 (got {})", o.factor));
  const Scenario base = load_scenario(o.scenario, o.overrides);
  check_plain_collective(base, "perf");
  PerfTable table;
  table.collective = o.collective;
  table.ranks = base.ranks;
  table.nodes = nodes_of(base);
  std::vector<PointPlan> plans;
  std::vector<std::vector<std::string>> sets;
  const std::vector<std::uint64_t> sizes = perf_sizes(o, base.ranks);
  if (sizes.empty())
    throw InputError(fmt::format("--min, --max: no size from {} to {} B holds a float per rank of {}",
                                 o.min_bytes, o.max_bytes, base.ranks));
  for (std::uint64_t bytes : sizes) {
    Measurement m;
    m.collective = o.collective;
    m.ranks = base.ranks;
    m.nodes = table.nodes;
    m.bytes = bytes;
    m.source = fmt::format("{} at {} B", o.collective, bytes);
    PointPlan plan = plan_point(base, m, /*keep_platform=*/true);
    sets.push_back(o.overrides);
    sets.back().insert(sets.back().end(), plan.sets.begin(), plan.sets.end());
    plans.push_back(std::move(plan));
  }
  std::vector<std::string> choices;
  const std::vector<double> times = run_points({o.exe, o.scenario, o.simgrid_args, o.jobs}, sets, &choices);
  const double bus = bus_bandwidth_factor(o.collective, base.ranks);
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    PerfRow row;
    row.bytes = sizes[i];
    row.count = sizes[i] / 4 / (per_rank_count(o.collective) ? static_cast<std::uint64_t>(base.ranks) : 1);
    row.time_s = times[i] / plans[i].divisor;
    row.algbw_GBps = static_cast<double>(row.bytes) / row.time_s / 1e9;
    row.busbw_GBps = row.algbw_GBps * bus;
    ComparedPoint point;
    point.measured.bytes = sizes[i];
    point.choice = row.choice = choices[i];
    mark_calibration_coverage(base, point);
    row.in_measured_range = point.in_measured_range;
    row.choice_observed = point.choice_observed;
    table.rows.push_back(row);
  }
  return table;
}

std::string perf_text(const PerfTable& t) {
  const bool reduces = t.collective == "all_reduce" || t.collective == "reduce_scatter";
  std::string out = fmt::format("# aggsim perf: {} on {} ranks, {} node{} (simulated)\n#\n", t.collective,
                                t.ranks, t.nodes, t.nodes == 1 ? "" : "s");
  out += fmt::format("#{:>61}{:>33}\n", "out-of-place", "");
  // Each column after the first starts with a space, so values wider than their column (a size of
  // 10^14 B, a time of 10^8 us) still stand apart, as nccl-tests' own columns do.
  out += fmt::format("#{:>11} {:>12} {:>9} {:>7} {:>7} {:>10} {:>7} {:>7} {:>6}  {}\n", "size", "count", "type",
                     "redop", "root", "time", "algbw", "busbw", "#wrong", "choice");
  out += fmt::format("#{:>11} {:>12} {:>9} {:>7} {:>7} {:>10} {:>7} {:>7} {:>6}\n", "(B)", "(elements)", "", "",
                     "", "(us)", "(GB/s)", "(GB/s)", "");
  double busbw_sum = 0;
  for (const PerfRow& r : t.rows) {
    std::string marks = r.choice;
    if (r.in_measured_range == 0) marks += " range?";
    if (r.choice_observed == 0) marks += " choice?";
    out += fmt::format(" {:>11} {:>12} {:>9} {:>7} {:>7} {:>10.2f} {:>7.2f} {:>7.2f} {:>6}  {}\n", r.bytes, r.count,
                       "float", reduces ? "sum" : "none", t.collective == "broadcast" ? 0 : -1,
                       r.time_s * 1e6, r.algbw_GBps, r.busbw_GBps, "N/A", marks);
    busbw_sum += r.busbw_GBps;
  }
  out += fmt::format("# Avg bus bandwidth    : {:.6g} \n", t.rows.empty() ? 0.0 : busbw_sum / t.rows.size());
  return out;
}

std::string perf_csv(const PerfTable& t) {
  std::string out =
      "collective,ranks,nodes,bytes,count,time_s,algbw_GBps,busbw_GBps,choice,in_measured_range,choice_"
      "observed\n";
  const auto flag = [](int f) { return f < 0 ? std::string() : fmt::format("{}", f); };
  for (const PerfRow& r : t.rows)
    out += csv_row({t.collective, fmt::format("{}", t.ranks), fmt::format("{}", t.nodes),
                    fmt::format("{}", r.bytes), fmt::format("{}", r.count), fmt::format("{}", r.time_s),
                    fmt::format("{:.6g}", r.algbw_GBps), fmt::format("{:.6g}", r.busbw_GBps), r.choice,
                    flag(r.in_measured_range), flag(r.choice_observed)});
  return out;
}

}  // namespace aggsim
