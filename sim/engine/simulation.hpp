#pragma once
// Runs one scenario in this process: one SimGrid Engine, one actor per rank. SimGrid allows one
// Engine per process, so call simulate() at most once per process (tests fork for isolation).
#include <Eigen/Core>
#include <functional>
#include <string>
#include <vector>

#include "sim/metrics/step_log.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/workload/evaluator.hpp"

namespace aggsim {

struct SimulationHooks {
  // Called on each rank after each aggregation with its proxy gradient before and after.
  std::function<void(int rank, int step, const Eigen::VectorXf& before, const Eigen::VectorXf& after)> after_aggregate;
  // Called on each rank after each training step with its updated weights (workload runs only).
  std::function<void(int rank, int step, const Eigen::VectorXf& weights)> after_step;
};

struct SimulationResult {
  StepLog log{0, 0};
  std::vector<std::pair<std::string, std::string>> extra_files;  // trace.json, links.csv (output.trace)
  double sim_time_s = 0;
  std::uint64_t bytes_sent = 0;
  std::uint64_t messages_sent = 0;
  std::string platform_description;
  std::vector<Evaluation> evaluations;  // held-out evaluations of the averaged model (workload runs)  // "platforms/x.xml (16 hosts)" or "cluster (64 hosts)"
};

// `simgrid_args` are --cfg=... / --log=... flags passed through to SimGrid (they override ours).
SimulationResult simulate(const Scenario& scenario, const std::vector<std::string>& simgrid_args,
                          const SimulationHooks& hooks = {});

// Loads the platform in a fresh Engine and checks that the ranks fit (for `aggsim validate`).
// Returns the platform description. Throws InputError.
std::string check_platform(const Scenario& scenario, const std::vector<std::string>& simgrid_args);

// SimGrid settings a network preset stands for.
std::vector<std::string> network_preset_config(NetworkPreset preset);

std::string simgrid_version();

}  // namespace aggsim
