#include "sim/output/report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "algorithms/registry.hpp"
#include "sim/core/strings.hpp"
#include "sim/core/units.hpp"
#include "sim/output/columns.hpp"
#include "sim/output/step_columns.hpp"
#include "sim/scenario/scenario_loader.hpp"

namespace aggsim {

namespace {

std::string optional_cell(const std::optional<double>& v) {
  return v ? fmt::format("{}", *v) : std::string();
}

// Mean of the steps' times: what summary.json reports and the printed summary shows.
double mean_step_time_s(const std::vector<StepSummary>& steps) {
  double total = 0;
  for (const auto& s : steps) total += s.step_time_s;
  return steps.empty() ? 0.0 : total / static_cast<double>(steps.size());
}

// The end time of the first evaluated step whose held-out loss is at most the target.
std::optional<double> time_to_target(const std::vector<StepSummary>& steps, double target) {
  for (const auto& s : steps)
    if (s.loss && *s.loss <= target) return s.end_time_s;
  return std::nullopt;
}

}  // namespace

std::vector<StepSummary> step_summaries(const SimulationResult& result) {
  auto steps = summarize_steps(result.log);
  for (const Evaluation& e : result.evaluations) {
    StepSummary& s = steps.at(static_cast<std::size_t>(e.step));
    s.loss = e.loss;
    s.accuracy = e.accuracy;
    s.consensus_distance = e.consensus_distance;
  }
  for (std::size_t i = 0; i < result.math.size() && i < steps.size(); ++i) steps[i].math = result.math[i];
  return steps;
}

CallBandwidth call_bandwidth(const Scenario& sc, int group_size) {
  return call_bandwidth(sc.algorithm.entry ? call_identity(*sc.algorithm.entry, sc.algorithm.params)
                                           : CallIdentity{CollectiveKind::all_reduce, sc.algorithm.name},
                        group_size);
}

CallBandwidth call_bandwidth(CollectiveKind collective, const std::string& algorithm, int group_size) {
  return call_bandwidth(CallIdentity{collective, algorithm}, group_size);
}

CallBandwidth call_bandwidth(const CallIdentity& call, int group_size) {
  CallBandwidth bw;
  bw.call = call;
  bw.algbw_applies = bw.call.collective != CollectiveKind::neighbor_exchange;
  // nccl-tests' factor applies to its size, the collective's whole buffer: p times one rank's payload.
  const std::optional<double> factor = nccl_tests_bus_factor(bw.call.collective, group_size);
  bw.busbw_applies = factor.has_value();
  if (factor) bw.bus_factor = *factor * (bw.call.per_rank_bytes ? group_size : 1);
  return bw;
}

std::optional<double> CallBandwidth::algbw_GBps(double dense_bytes, double seconds) const {
  if (!algbw_applies || !(seconds > 0)) return std::nullopt;
  return dense_bytes / seconds / 1e9;
}

std::optional<double> CallBandwidth::busbw_GBps(double wire_bytes, double seconds) const {
  if (!busbw_applies || !(seconds > 0)) return std::nullopt;
  return wire_bytes * bus_factor / seconds / 1e9;
}

namespace {

// The calls of a set of steps: their bytes and times summed over the calls that transferred.
struct CallTotals {
  int calls = 0;  // made
  int timed = 0;  // with a transfer
  double dense_bytes = 0, wire_bytes = 0, seconds = 0;
};

CallTotals call_totals(const SimulationResult& result, int first_step, int last_step) {
  CallTotals t;
  for (int s = first_step; s <= last_step && s < result.calls.steps_recorded(); ++s)
    for (int b = 0; b < result.calls.calls_per_step(); ++b) {
      const CollectiveRecord& r = result.calls.at(s, b);
      if (!r.called) continue;
      ++t.calls;
      const std::optional<CallSpan> span = result.calls.span(s, b);
      if (!span) continue;
      ++t.timed;
      t.dense_bytes += static_cast<double>(result.call_sizes.at(static_cast<std::size_t>(b)).dense_bytes);
      t.wire_bytes += static_cast<double>(result.call_sizes.at(static_cast<std::size_t>(b)).wire_bytes);
      t.seconds += span->seconds();
    }
  return t;
}

std::string number_cell(double v) {
  return fmt::format("{}", v);
}

}  // namespace

std::string collectives_csv(const Scenario& sc, const SimulationResult& result) {
  const CallBandwidth bw = call_bandwidth(sc, result.group_size);
  CsvTableWriter csv(collectives_table());
  for (int s = 0; s < result.calls.steps_recorded(); ++s)
    for (int b = 0; b < result.calls.calls_per_step(); ++b) {
      const CollectiveRecord& r = result.calls.at(s, b);
      if (!r.called) continue;
      const CallSize& size = result.call_sizes.at(static_cast<std::size_t>(b));
      const std::optional<CallSpan> span = result.calls.span(s, b);
      const bool timed = span.has_value();
      const double seconds = timed ? span->seconds() : 0.0;
      const CallBandwidth own = size.collective ? call_bandwidth(*size.collective, bw.call.algorithm, size.group_size) : bw;
      csv.cell("step", fmt::format("{}", s))
          .cell("bucket", fmt::format("{}", b))
          .cell("rank_group", size.rank_group.empty() ? result.rank_group : size.rank_group)
          .cell("collective", collective_kind_name(own.call.collective))
          .cell("algorithm", bw.call.algorithm)
          .cell("nccl_algorithm", r.choice.nccl_algorithm)
          .cell("protocol", r.choice.protocol)
          .cell("channels", r.choice.channels > 0 ? fmt::format("{}", r.choice.channels) : "")
          .cell("dense_bytes", fmt::format("{}", size.dense_bytes))
          .cell("wire_bytes", fmt::format("{}", size.wire_bytes))
          .cell("start_s", timed ? number_cell(span->start) : "")
          .cell("end_s", timed ? number_cell(span->end) : "")
          .cell("time_s", timed ? number_cell(seconds) : "")
          .cell("algbw_GBps", optional_cell(own.algbw_GBps(static_cast<double>(size.dense_bytes), seconds)))
          .cell("busbw_GBps", optional_cell(own.busbw_GBps(static_cast<double>(size.wire_bytes), seconds)))
          .cell("unit", size.unit)
          .end_row();
    }
  return csv.text();
}

std::string steps_csv(const Scenario& sc, const SimulationResult& result,
                      const std::vector<StepSummary>& steps) {
  const CallBandwidth bw = call_bandwidth(sc, result.group_size);
  CsvTableWriter csv(steps_table());
  for (const auto& s : steps) {
    const CallTotals calls = call_totals(result, s.step, s.step);
    const StepRow row{s, bw.algbw_GBps(calls.dense_bytes, calls.seconds),
                      bw.busbw_GBps(calls.wire_bytes, calls.seconds)};
    for (const auto& column : step_columns()) csv.cell(column.column.name, column.cell(row));
    csv.end_row();
  }
  return csv.text();
}

namespace {

// summary.json's `format_version` (a sweep's results.csv carries it as a column): raised when a
// field changes meaning or goes away, so a reader can tell old files from new ones.
constexpr int kSummaryFormatVersion = 1;

// summary.json's fields in summary_table()'s order; a field it does not define is a bug.
class SummaryWriter {
 public:
  void set(const std::string& key, nlohmann::ordered_json value) {
    const auto& columns = summary_table().columns;
    while (next_ < columns.size() && columns[next_].name != key) {
      if (!columns[next_].optional)
        throw std::logic_error(
            fmt::format("summary.json: '{}' written before '{}'", key, columns[next_].name));
      ++next_;
    }
    if (next_ == columns.size())
      throw std::logic_error(
          fmt::format("summary.json: '{}' is not in its definition, or out of order", key));
    ++next_;
    j_[key] = std::move(value);
  }
  // The algorithm's own figures, after every defined field.
  void set_extra(const std::string& key, nlohmann::ordered_json value) { j_[key] = std::move(value); }
  std::string dump() const { return j_.dump(2) + "\n"; }

 private:
  nlohmann::ordered_json j_;
  std::size_t next_ = 0;
};

nlohmann::ordered_json json_or_null(std::optional<double> v) {
  return v ? nlohmann::ordered_json(*v) : nlohmann::ordered_json(nullptr);
}

// Per call size the run used, whether the calibration saw that size and that NCCL choice (the
// flags `aggsim compare` and `perf` print), and the same over the whole run.
void set_calibration_coverage(SummaryWriter& j, const RunCalibration& cal, const SimulationResult& result) {
  struct Size {
    int calls = 0;
    std::map<std::string, int> choices;
  };
  std::map<std::uint64_t, Size> sizes;
  for (int s = 0; s < result.calls.steps_recorded(); ++s)
    for (int b = 0; b < result.calls.calls_per_step(); ++b) {
      const CollectiveRecord& r = result.calls.at(s, b);
      if (!r.called) continue;
      Size& size = sizes[result.call_sizes.at(static_cast<std::size_t>(b)).wire_bytes];
      ++size.calls;
      if (!r.choice.nccl_algorithm.empty()) ++size.choices[r.choice.nccl_algorithm + "/" + r.choice.protocol];
    }
  // 1 / 0 / -1 (unknown); a run's flag is 0 if any size's is, else unknown if any is.
  int all_in_range = 1, all_observed = 1;
  const auto combine = [](int& all, int flag) { all = all == 0 || flag == 0 ? 0 : std::min(all, flag); };
  const auto flag = [](int f) { return f < 0 ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(f); };
  nlohmann::ordered_json entries = nlohmann::ordered_json::array();
  for (const auto& [bytes, size] : sizes) {
    std::string choice;
    int most = 0;
    for (const auto& [c, n] : size.choices)
      if (n > most) choice = c, most = n;
    const int in_range =
        cal.measured_max_bytes == 0 ? -1 : bytes >= cal.measured_min_bytes && bytes <= cal.measured_max_bytes;
    const int observed = cal.observed_choices.empty() || choice.empty()
                             ? -1
                             : std::find(cal.observed_choices.begin(), cal.observed_choices.end(), choice) !=
                                   cal.observed_choices.end();
    combine(all_in_range, in_range);
    combine(all_observed, observed);
    nlohmann::ordered_json e;
    e["wire_bytes"] = bytes;
    e["calls"] = size.calls;
    e["choice"] = choice.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(choice);
    e["in_measured_range"] = flag(in_range);
    e["choice_observed"] = flag(observed);
    entries.push_back(e);
  }
  if (sizes.empty()) all_in_range = all_observed = -1;
  j.set("calibration_sizes", entries);
  j.set("calibration_in_measured_range", flag(all_in_range));
  j.set("calibration_choice_observed", flag(all_observed));
}

// What ran: versions, the scenario's choices, the platform and the model.
void set_run_identity(SummaryWriter& j, const Scenario& sc, const SimulationResult& result) {
  j.set("format_version", kSummaryFormatVersion);
  j.set("aggsim_version", AGGSIM_VERSION);
  j.set("simgrid_version", simgrid_version());
  j.set("scenario", sc.name);
  j.set("seed", sc.seed);
  j.set("ranks", sc.ranks);
  j.set("steps", sc.steps);
  j.set("algorithm", sc.algorithm.name);
  j.set("collective", collective_kind_name(call_bandwidth(sc, result.group_size).call.collective));
  j.set("op", reduce_kind_name(sc.algorithm.op.kind));
  j.set("compression", sc.compression.name);
  j.set("network", network_preset_name(sc.network));
  j.set("calibration",
        result.calibration ? nlohmann::ordered_json(result.calibration->file) : nlohmann::ordered_json());
  j.set("platform", result.platform_description);
  j.set("model_bytes", sc.model.size_bytes);
  j.set("math", sc.model.math);
  j.set("gradient", !sc.model.math        ? nlohmann::ordered_json(nullptr)
                    : sc.workload.enabled ? nlohmann::ordered_json("workload")
                                          : nlohmann::ordered_json("synthetic"));
}

// The simulated time and the per-step means of its communication.
void set_step_times(SummaryWriter& j, const SimulationResult& result, const std::vector<StepSummary>& steps) {
  j.set("sim_time_s", result.sim_time_s);
  j.set("mean_step_time_s", mean_step_time_s(steps));
  double exposed = 0, hidden = 0;
  for (const auto& s : steps) {
    exposed += s.exposed_comm_time_s;
    hidden += s.hidden_comm_time_s;
  }
  const double n = steps.empty() ? 1.0 : static_cast<double>(steps.size());
  j.set("exposed_comm_time_s", exposed / n);
  j.set("hidden_comm_time_s", hidden / n);
  if (result.log.reports_gathers()) {
    double gathers = 0;
    for (const auto& s : steps) gathers += s.exposed_gather_time_s.value_or(0.0);
    j.set("exposed_gather_time_s", gathers / n);
  }
}

// Over every call of the run that transferred anything: sums of bytes over the sum of times, so
// the means below give the bandwidths exactly (as nccl-tests derives them from its mean time).
void set_collective_figures(SummaryWriter& j, const Scenario& sc, const SimulationResult& result) {
  const CallTotals calls = call_totals(result, 0, sc.steps - 1);
  const CallBandwidth bw = call_bandwidth(sc, result.group_size);
  const auto mean = [&](double total) {
    if (!calls.timed) return nlohmann::ordered_json(nullptr);
    const double m = total / calls.timed;
    // Whole byte counts (every call of a size) stay integers.
    return m == std::floor(m) && m < 9e15 ? nlohmann::ordered_json(static_cast<std::uint64_t>(m))
                                          : nlohmann::ordered_json(m);
  };
  j.set("collective_calls", calls.calls);
  j.set("collective_time_s",
        calls.timed ? nlohmann::ordered_json(calls.seconds / calls.timed) : nlohmann::ordered_json(nullptr));
  j.set("collective_dense_bytes", mean(calls.dense_bytes));
  j.set("collective_wire_bytes", mean(calls.wire_bytes));
  j.set("algbw_GBps", json_or_null(bw.algbw_GBps(calls.dense_bytes, calls.seconds)));
  j.set("busbw_GBps", json_or_null(bw.busbw_GBps(calls.wire_bytes, calls.seconds)));
}

// Means over the steps of the math plane's figures; null with math off.
void set_math_means(SummaryWriter& j, const std::vector<StepSummary>& steps) {
  for (const auto& [key, field] : std::vector<std::pair<const char*, double StepMath::*>>{
           {"agg_error", &StepMath::agg_error},
           {"agg_signed_error", &StepMath::agg_signed_error},
           {"compress_error", &StepMath::compress_error},
           {"rank_spread", &StepMath::rank_spread}}) {
    double total = 0;
    int measured = 0;
    for (const auto& s : steps)
      if (s.math && measured_on(s, field)) total += (*s.math).*field, ++measured;
    j.set(key, measured ? nlohmann::ordered_json(total / measured) : nlohmann::ordered_json(nullptr));
  }
}

// What went over the network, and how many steps were simulated rather than replayed.
void set_traffic(SummaryWriter& j, const SimulationResult& result, const std::vector<StepSummary>& steps) {
  int communicated = 0;
  for (const auto& s : steps) communicated += s.communicated;
  j.set("bytes_sent", result.bytes_sent);
  j.set("messages", result.messages_sent);
  j.set("steps_communicated", communicated);
  j.set("steps_replayed", result.steps_replayed);
  j.set("replay_refused", result.replay_refusal.empty() ? nlohmann::ordered_json(nullptr)
                                                        : nlohmann::ordered_json(result.replay_refusal));
}

// The training problem's outcome, when a workload ran.
void set_workload_outcome(SummaryWriter& j, const Scenario& sc, const SimulationResult& result,
                          const std::vector<StepSummary>& steps) {
  if (!sc.workload.enabled) return;
  const WorkloadOptions& w = sc.workload.options;
  j.set("problem", problem_name(w.problem));
  j.set("final_loss", result.evaluations.empty() ? nlohmann::ordered_json()
                                                 : nlohmann::ordered_json(result.evaluations.back().loss));
  if (w.target_loss) {
    const auto t = time_to_target(steps, *w.target_loss);
    j.set("target_loss", *w.target_loss);
    j.set("time_to_target_s", t ? nlohmann::ordered_json(*t) : nlohmann::ordered_json());
  }
}

// The algorithm's own figures, after every defined field; a number that is not finite is null.
void set_algorithm_fields(SummaryWriter& j, const std::vector<SummaryField>& fields) {
  const auto number = [](double v) {
    return std::isfinite(v) ? nlohmann::ordered_json(v) : nlohmann::ordered_json(nullptr);
  };
  for (const auto& f : fields) {
    if (f.text) {
      j.set_extra(f.key, *f.text);
    } else if (f.object) {
      nlohmann::ordered_json o = nlohmann::ordered_json::object();
      for (const auto& [key, value] : *f.object) o[key] = number(value);
      j.set_extra(f.key, o);
    } else {
      j.set_extra(f.key, number(f.value));
    }
  }
}

}  // namespace

std::string summary_json(const Scenario& sc, const SimulationResult& result,
                         const std::vector<StepSummary>& steps) {
  SummaryWriter j;
  set_run_identity(j, sc, result);
  set_step_times(j, result, steps);
  set_collective_figures(j, sc, result);
  set_math_means(j, steps);
  set_traffic(j, result, steps);
  if (result.calibration) set_calibration_coverage(j, *result.calibration, result);
  set_workload_outcome(j, sc, result, steps);
  set_algorithm_fields(j, result.summary_fields);
  return j.dump();
}

std::vector<OutputFile> run_outputs(const Scenario& sc, const SimulationResult& result,
                                    const std::vector<StepSummary>& steps, const std::string& resolved) {
  std::vector<OutputFile> files = {
      {"resolved.yaml", resolved + link_classes_comment(sc, result.link_classes)},
      {"summary.json", summary_json(sc, result, steps)},
      {"steps.csv", steps_csv(sc, result, steps)},
      {"collectives.csv", collectives_csv(sc, result)}};
  files.insert(files.end(), result.extra_files.begin(), result.extra_files.end());
  return files;
}

std::string human_summary(const Scenario& sc, const SimulationResult& result,
                          const std::vector<StepSummary>& steps, const std::string& out_dir,
                          const std::vector<OutputFile>& files) {
  const double mean = mean_step_time_s(steps);
  std::string out;
  out += fmt::format("aggsim {}: {} ({}, compression {}) on {} ranks, platform {}, network {}\n", sc.name,
                     sc.algorithm.name, reduce_kind_name(sc.algorithm.op.kind), sc.compression.name, sc.ranks,
                     result.platform_description, network_preset_name(sc.network));
  out += fmt::format("  {} steps in {} simulated; mean step {}; {} sent in {} messages\n", sc.steps,
                     units::format_duration(result.sim_time_s), units::format_duration(mean),
                     units::format_bytes(static_cast<double>(result.bytes_sent)), result.messages_sent);
  if (!result.evaluations.empty()) {
    const Evaluation& e = result.evaluations.back();
    out += fmt::format("  held-out loss after step {}: {:.6g}{}\n", e.step, e.loss,
                       e.accuracy ? fmt::format(", accuracy {:.4f}", *e.accuracy) : std::string());
    const WorkloadOptions& w = sc.workload.options;
    if (w.target_loss) {
      const auto t = time_to_target(steps, *w.target_loss);
      out += t ? fmt::format("  target loss {:.6g} reached at {} simulated\n", *w.target_loss,
                             units::format_duration(*t))
               : fmt::format("  target loss {:.6g} not reached in {} steps\n", *w.target_loss, sc.steps);
    }
  }
  std::string names;
  for (const auto& file : files) names += (names.empty() ? "" : ", ") + file.first;
  out += fmt::format("  outputs: {}/ ({})\n", out_dir, names);
  return out;
}

}  // namespace aggsim
