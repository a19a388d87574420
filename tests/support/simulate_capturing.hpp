#pragma once
// Runs a scenario with a hook that keeps every rank's vector before and after each aggregation.
#include <Eigen/Core>
#include <map>
#include <vector>

#include "sim/engine/simulation.hpp"
#include "sim/scenario/scenario.hpp"

namespace aggsim::test {

// Each rank's vector before and after aggregation, by step and rank, and the run's result. Call in
// a child process (run_isolated): one simulation per process.
struct Captured {
  std::map<int, std::vector<Eigen::VectorXf>> before, after;
  SimulationResult result;
};

inline Captured simulate_capturing(const Scenario& sc) {
  Captured c;
  SimulationHooks hooks;
  hooks.after_aggregate = [&](int rank, int step, const Eigen::VectorXf& in, const Eigen::VectorXf& out) {
    c.before[step].resize(static_cast<std::size_t>(sc.ranks));
    c.after[step].resize(static_cast<std::size_t>(sc.ranks));
    c.before[step][static_cast<std::size_t>(rank)] = in;
    c.after[step][static_cast<std::size_t>(rank)] = out;
  };
  c.result = simulate(sc, {}, hooks);
  return c;
}

}  // namespace aggsim::test
