#include "sim/output/report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "algorithms/registry.hpp"
#include "sim/core/strings.hpp"
#include "sim/core/units.hpp"
#include "sim/scenario/scenario_loader.hpp"

namespace aggsim {

namespace {

std::string optional_cell(const std::optional<double>& v) {
  return v ? fmt::format("{}", *v) : std::string();
}

// Step summaries with the evaluations of workload runs filled in.
std::vector<StepSummary> summarize(const SimulationResult& result) {
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

// A local step (algorithm.every > 1) aggregated and compressed nothing: only rank_spread, how far
// apart the ranks' vectors are, means something there.
bool measured_on(const StepSummary& s, double StepMath::*field) {
  return s.communicated || field == &StepMath::rank_spread;
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

BusBandwidth bus_bandwidth(const Scenario& sc) {
  BusBandwidth bw;
  bw.applies = sc.algorithm.entry && sc.algorithm.entry->reduces_in_flight;  // the all-reduce collectives
  bw.bytes = static_cast<double>(sc.model.size_bytes);
  bw.ranks = sc.ranks;
  return bw;
}

std::optional<double> BusBandwidth::algbw_GBps(double seconds) const {
  if (!applies || !(seconds > 0)) return std::nullopt;
  return bytes / seconds / 1e9;
}

std::optional<double> BusBandwidth::busbw_GBps(double seconds) const {
  const auto alg = algbw_GBps(seconds);
  if (!alg) return std::nullopt;
  return *alg * 2.0 * (ranks - 1) / ranks;
}

std::string steps_csv(const std::vector<StepSummary>& steps, const BusBandwidth& bw) {
  // Shortest round-trip formatting: exact and byte-stable across runs.
  std::string out =
      "step,step_time_s,comm_time_s,compute_time_s,end_time_s,bytes_sent,messages,loss,accuracy,consensus_"
      "distance,"
      "exposed_comm_time_s,algbw_GBps,busbw_GBps,agg_error,agg_signed_error,compress_error,rank_spread,"
      "communicated\n";
  const auto math_cell = [](const StepSummary& s, double StepMath::*field) {
    return s.math && measured_on(s, field) ? fmt::format("{}", (*s.math).*field) : std::string();
  };
  for (const auto& s : steps)
    out += csv_row({fmt::format("{}", s.step), fmt::format("{}", s.step_time_s),
                    fmt::format("{}", s.comm_time_s), fmt::format("{}", s.compute_time_s),
                    fmt::format("{}", s.end_time_s), fmt::format("{}", s.bytes_sent),
                    fmt::format("{}", s.messages_sent), optional_cell(s.loss), optional_cell(s.accuracy),
                    optional_cell(s.consensus_distance), fmt::format("{}", s.exposed_comm_time_s),
                    optional_cell(bw.algbw_GBps(s.comm_time_s)), optional_cell(bw.busbw_GBps(s.comm_time_s)),
                    math_cell(s, &StepMath::agg_error), math_cell(s, &StepMath::agg_signed_error),
                    math_cell(s, &StepMath::compress_error), math_cell(s, &StepMath::rank_spread),
                    s.communicated ? "1" : "0"});
  return out;
}

std::string summary_json(const Scenario& sc, const SimulationResult& result,
                         const std::vector<StepSummary>& steps) {
  nlohmann::ordered_json j;
  j["aggsim_version"] = AGGSIM_VERSION;
  j["simgrid_version"] = simgrid_version();
  j["scenario"] = sc.name;
  j["seed"] = sc.seed;
  j["ranks"] = sc.ranks;
  j["steps"] = sc.steps;
  j["algorithm"] = sc.algorithm.name;
  j["op"] = reduce_kind_name(sc.algorithm.op.kind);
  j["compression"] = sc.compression.name;
  j["network"] = network_preset_name(sc.network);
  j["calibration"] = sc.calibration ? nlohmann::ordered_json(sc.calibration->file) : nlohmann::ordered_json();
  j["platform"] = result.platform_description;
  j["model_bytes"] = sc.model.size_bytes;
  j["math"] = sc.model.math;
  j["sim_time_s"] = result.sim_time_s;
  j["mean_step_time_s"] = mean_step_time_s(steps);
  // Means over steps; the bandwidths from the mean aggregation time of the steps that aggregated
  // (all of them unless algorithm.every > 1), as nccl-tests derives them from its mean time per
  // iteration.
  double comm = 0, exposed = 0;
  int communicated = 0;
  for (const auto& s : steps) {
    exposed += s.exposed_comm_time_s;
    if (s.communicated) comm += s.comm_time_s, ++communicated;
  }
  const double n = steps.empty() ? 1.0 : static_cast<double>(steps.size());
  j["exposed_comm_time_s"] = exposed / n;
  const BusBandwidth bw = bus_bandwidth(sc);
  const auto json_or_null = [](std::optional<double> v) {
    return v ? nlohmann::ordered_json(*v) : nlohmann::ordered_json(nullptr);
  };
  // No aggregating step: a mean time of 0, for which the bandwidths are null.
  const double mean_comm = communicated ? comm / communicated : 0.0;
  j["algbw_GBps"] = json_or_null(bw.algbw_GBps(mean_comm));
  j["busbw_GBps"] = json_or_null(bw.busbw_GBps(mean_comm));
  // Means over the steps of the math plane's figures; null with math off.
  for (const auto& [key, field] : std::vector<std::pair<const char*, double StepMath::*>>{
           {"agg_error", &StepMath::agg_error},
           {"agg_signed_error", &StepMath::agg_signed_error},
           {"compress_error", &StepMath::compress_error},
           {"rank_spread", &StepMath::rank_spread}}) {
    double total = 0;
    int measured = 0;
    for (const auto& s : steps)
      if (s.math && measured_on(s, field)) total += (*s.math).*field, ++measured;
    j[key] = measured ? nlohmann::ordered_json(total / measured) : nlohmann::ordered_json(nullptr);
  }
  j["bytes_sent"] = result.bytes_sent;
  j["messages"] = result.messages_sent;
  j["steps_communicated"] = communicated;
  j["steps_replayed"] = result.steps_replayed;
  j["replay_refused"] = result.replay_refusal.empty() ? nlohmann::ordered_json(nullptr)
                                                      : nlohmann::ordered_json(result.replay_refusal);
  if (sc.workload.enabled) {
    const WorkloadOptions w = workload_options(sc.workload.params);
    j["problem"] = problem_name(w.problem);
    j["final_loss"] = result.evaluations.empty() ? nlohmann::ordered_json()
                                                 : nlohmann::ordered_json(result.evaluations.back().loss);
    if (w.target_loss) {
      const auto t = time_to_target(steps, *w.target_loss);
      j["target_loss"] = *w.target_loss;
      j["time_to_target_s"] = t ? nlohmann::ordered_json(*t) : nlohmann::ordered_json();
    }
  }
  for (const auto& f : result.summary_fields)
    j[f.key] = std::isfinite(f.value) ? nlohmann::ordered_json(f.value) : nlohmann::ordered_json(nullptr);
  return j.dump(2) + "\n";
}

std::vector<OutputFile> run_outputs(const Scenario& sc, const SimulationResult& result) {
  const auto steps = summarize(result);
  std::vector<OutputFile> files = {
      {"resolved.yaml", resolved_yaml(sc) + link_classes_comment(sc, result.link_classes)},
      {"summary.json", summary_json(sc, result, steps)},
      {"steps.csv", steps_csv(steps, bus_bandwidth(sc))}};
  files.insert(files.end(), result.extra_files.begin(), result.extra_files.end());
  return files;
}

std::string human_summary(const Scenario& sc, const SimulationResult& result, const std::string& out_dir,
                          const std::vector<OutputFile>& files) {
  const auto steps = summarize(result);
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
    const WorkloadOptions w = workload_options(sc.workload.params);
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
