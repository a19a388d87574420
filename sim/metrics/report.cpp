#include "sim/metrics/report.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cmath>

#include "algorithms/registry.hpp"
#include "sim/core/units.hpp"
#include "sim/scenario/scenario_loader.hpp"

namespace aggsim {

std::string steps_csv(const std::vector<StepSummary>& steps) {
  // Shortest round-trip formatting: exact and byte-stable across runs.
  std::string out = "step,step_time_s,comm_time_s,compute_time_s,end_time_s,bytes_sent,messages\n";
  for (const auto& s : steps)
    out += fmt::format("{},{},{},{},{},{},{}\n", s.step, s.step_time_s, s.comm_time_s, s.compute_time_s,
                       s.end_time_s, s.bytes_sent, s.messages_sent);
  return out;
}

std::string summary_json(const Scenario& sc, const SimulationResult& result, const std::vector<StepSummary>& steps) {
  double total_step_time = 0;
  for (const auto& s : steps) total_step_time += s.step_time_s;
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
  j["platform"] = result.platform_description;
  j["model_bytes"] = sc.model.size_bytes;
  j["math"] = sc.model.math;
  j["sim_time_s"] = result.sim_time_s;
  j["mean_step_time_s"] = steps.empty() ? 0.0 : total_step_time / static_cast<double>(steps.size());
  j["bytes_sent"] = result.bytes_sent;
  j["messages"] = result.messages_sent;
  const AlgorithmInfo* algorithm = find_algorithm(sc.algorithm.name);
  if (algorithm->summary_fields)
    for (const auto& f : algorithm->summary_fields(algorithm_config(sc)))
      j[f.key] = std::isfinite(f.value) ? nlohmann::ordered_json(f.value) : nlohmann::ordered_json(nullptr);
  return j.dump(2) + "\n";
}

std::vector<OutputFile> run_outputs(const Scenario& sc, const SimulationResult& result) {
  const auto steps = summarize_steps(result.log);
  return {{"resolved.yaml", resolved_yaml(sc)},
          {"summary.json", summary_json(sc, result, steps)},
          {"steps.csv", steps_csv(steps)}};
}

std::string human_summary(const Scenario& sc, const SimulationResult& result, const std::string& out_dir) {
  const auto steps = summarize_steps(result.log);
  double mean = 0;
  for (const auto& s : steps) mean += s.step_time_s / static_cast<double>(steps.size());
  std::string out;
  out += fmt::format("aggsim {}: {} ({}, compression {}) on {} ranks, platform {}, network {}\n", sc.name,
                     sc.algorithm.name, reduce_kind_name(sc.algorithm.op.kind), sc.compression.name, sc.ranks,
                     result.platform_description, network_preset_name(sc.network));
  out += fmt::format("  {} steps in {} simulated; mean step {}; {} sent in {} messages\n", sc.steps,
                     units::format_duration(result.sim_time_s), units::format_duration(mean),
                     units::format_bytes(static_cast<double>(result.bytes_sent)), result.messages_sent);
  out += fmt::format("  outputs: {}/ (resolved.yaml, summary.json, steps.csv)\n", out_dir);
  return out;
}

}  // namespace aggsim
