#pragma once
// The files of a run folder, rendered as text (written by run_folder.hpp).
#include <string>
#include <vector>

#include "sim/engine/simulation.hpp"
#include "sim/output/run_folder.hpp"

namespace aggsim {

std::string steps_csv(const std::vector<StepSummary>& steps);
std::string summary_json(const Scenario& scenario, const SimulationResult& result,
                         const std::vector<StepSummary>& steps);
// resolved.yaml, summary.json, steps.csv
std::vector<OutputFile> run_outputs(const Scenario& scenario, const SimulationResult& result);
// A few lines for people.
std::string human_summary(const Scenario& scenario, const SimulationResult& result,
                          const std::string& out_dir, const std::vector<OutputFile>& files);

}  // namespace aggsim
