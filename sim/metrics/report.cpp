#include "sim/metrics/report.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cmath>

#include "algorithms/registry.hpp"
#include "sim/core/units.hpp"
#include "sim/scenario/scenario_loader.hpp"

namespace aggsim {

namespace {

std::string optional_cell(const std::optional<double>& v) { return v ? fmt::format("{}", *v) : std::string(); }

// Step summaries with the evaluations of workload runs filled in.
std::vector<StepSummary> summarize(const SimulationResult& result) {
  auto steps = summarize_steps(result.log);
  for (const Evaluation& e : result.evaluations) {
    StepSummary& s = steps.at(static_cast<std::size_t>(e.step));
    s.loss = e.loss;
    s.accuracy = e.accuracy;
    s.consensus_distance = e.consensus_distance;
  }
  return steps;
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

std::string steps_csv(const std::vector<StepSummary>& steps) {
  // Shortest round-trip formatting: exact and byte-stable across runs.
  std::string out =
      "step,step_time_s,comm_time_s,compute_time_s,end_time_s,bytes_sent,messages,loss,accuracy,consensus_distance\n";
  for (const auto& s : steps)
    out += fmt::format("{},{},{},{},{},{},{},{},{},{}\n", s.step, s.step_time_s, s.comm_time_s, s.compute_time_s,
                       s.end_time_s, s.bytes_sent, s.messages_sent, optional_cell(s.loss), optional_cell(s.accuracy),
                       optional_cell(s.consensus_distance));
  return out;
}

std::string summary_json(const Scenario& sc, const SimulationResult& result, const std::vector<StepSummary>& steps) {
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
  j["bytes_sent"] = result.bytes_sent;
  j["messages"] = result.messages_sent;
  if (sc.workload.enabled) {
    const WorkloadOptions w = workload_options(sc.workload.params);
    j["problem"] = problem_name(w.problem);
    j["final_loss"] = result.evaluations.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(result.evaluations.back().loss);
    if (w.target_loss) {
      const auto t = time_to_target(steps, *w.target_loss);
      j["target_loss"] = *w.target_loss;
      j["time_to_target_s"] = t ? nlohmann::ordered_json(*t) : nlohmann::ordered_json();
    }
  }
  const AlgorithmInfo* algorithm = find_algorithm(sc.algorithm.name);
  if (algorithm->summary_fields)
    for (const auto& f : algorithm->summary_fields(algorithm_config(sc)))
      j[f.key] = std::isfinite(f.value) ? nlohmann::ordered_json(f.value) : nlohmann::ordered_json(nullptr);
  return j.dump(2) + "\n";
}

std::vector<OutputFile> run_outputs(const Scenario& sc, const SimulationResult& result) {
  const auto steps = summarize(result);
  std::vector<OutputFile> files = {{"resolved.yaml", resolved_yaml(sc)},
                                   {"summary.json", summary_json(sc, result, steps)},
                                   {"steps.csv", steps_csv(steps)}};
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
  }
  std::string names;
  for (const auto& file : files) names += (names.empty() ? "" : ", ") + file.first;
  out += fmt::format("  outputs: {}/ ({})\n", out_dir, names);
  return out;
}

}  // namespace aggsim
