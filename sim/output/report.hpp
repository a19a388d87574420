#pragma once
// The files of a run folder, rendered as text (written by run_folder.hpp).
#include <optional>
#include <string>
#include <vector>

#include "algorithms/registry.hpp"
#include "sim/engine/simulation.hpp"
#include "sim/output/run_folder.hpp"

namespace aggsim {

// The bandwidth columns of one run: nccl-tests' algbw (dense bytes / time) and busbw (wire bytes x
// the collective's bus factor / time), with time from a call's first transfer to its last
// (sim/output/columns.cpp and step_columns.cpp have the definitions; sim/output/README.md why).
struct CallBandwidth {
  CallIdentity call;  // what the calls run: collectives.csv's `collective` and `algorithm`
  bool algbw_applies = false;
  bool busbw_applies = false;
  double bus_factor = 0;
  std::optional<double> algbw_GBps(double dense_bytes, double seconds) const;
  std::optional<double> busbw_GBps(double wire_bytes, double seconds) const;
};
CallBandwidth call_bandwidth(const Scenario& scenario, int group_size);
// One call's, where a run's calls differ (CallSize::collective): that collective over groups of p.
CallBandwidth call_bandwidth(const CallIdentity& call, int group_size);
CallBandwidth call_bandwidth(CollectiveKind collective, const std::string& algorithm, int group_size);

std::string collectives_csv(const Scenario& scenario, const SimulationResult& result);
std::string steps_csv(const Scenario& scenario, const SimulationResult& result,
                      const std::vector<StepSummary>& steps);
std::string summary_json(const Scenario& scenario, const SimulationResult& result,
                         const std::vector<StepSummary>& steps);
// The run's step summaries with its evaluations and math figures filled in: computed once per run
// and passed to every writer below.
std::vector<StepSummary> step_summaries(const SimulationResult& result);
// resolved.yaml, summary.json, steps.csv, collectives.csv (and trace.json, links.csv when traced);
// `resolved` is resolved_yaml(scenario), which the run folder's checks already needed.
std::vector<OutputFile> run_outputs(const Scenario& scenario, const SimulationResult& result,
                                    const std::vector<StepSummary>& steps, const std::string& resolved);
// A few lines for people.
std::string human_summary(const Scenario& scenario, const SimulationResult& result,
                          const std::vector<StepSummary>& steps, const std::string& out_dir,
                          const std::vector<OutputFile>& files);

}  // namespace aggsim
