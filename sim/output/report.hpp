#pragma once
// The files of a run folder, rendered as text (written by run_folder.hpp).
#include <optional>
#include <string>
#include <vector>

#include "sim/engine/simulation.hpp"
#include "sim/output/run_folder.hpp"

namespace aggsim {

// nccl-tests' bandwidth columns for all-reduce algorithms: algbw = S / t with S the modeled gradient
// (model.size) and t the aggregation time, busbw = algbw * 2 (p - 1) / p. Empty for other schemes.
struct BusBandwidth {
  bool applies = false;
  double bytes = 0;
  int ranks = 1;
  std::optional<double> algbw_GBps(double seconds) const;
  std::optional<double> busbw_GBps(double seconds) const;
};
BusBandwidth bus_bandwidth(const Scenario& scenario);

std::string steps_csv(const std::vector<StepSummary>& steps, const BusBandwidth& bw);
std::string summary_json(const Scenario& scenario, const SimulationResult& result,
                         const std::vector<StepSummary>& steps);
// resolved.yaml, summary.json, steps.csv
std::vector<OutputFile> run_outputs(const Scenario& scenario, const SimulationResult& result);
// A few lines for people.
std::string human_summary(const Scenario& scenario, const SimulationResult& result,
                          const std::string& out_dir, const std::vector<OutputFile>& files);

}  // namespace aggsim
