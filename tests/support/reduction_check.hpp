#pragma once
// Runs a scenario in a child process and checks, for every step, that every rank ended with the
// exact reduction (computed here directly, in double precision) of all ranks' inputs.
#include <fmt/format.h>

#include <Eigen/Core>
#include <cmath>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "sim/engine/simulation.hpp"
#include "sim/scenario/scenario_loader.hpp"
#include "support/isolated.hpp"
#include "support/simulate_capturing.hpp"

namespace aggsim::test {

struct ReductionError {
  double max_abs_error = 0;    // |rank result - direct reduction|, worst element
  double max_rank_spread = 0;  // largest difference between two ranks' results
  double reference_scale = 0;  // max |direct reduction|, for a relative bound
  int checked_vectors = 0;
};

inline Eigen::VectorXd direct_reduction(const std::vector<Eigen::VectorXf>& inputs, const ReduceOp& op) {
  Eigen::VectorXd acc = inputs.at(0).cast<double>();
  for (std::size_t r = 1; r < inputs.size(); ++r) {
    const Eigen::VectorXd x = inputs[r].cast<double>();
    if (op.kind == ReduceKind::min)
      acc = acc.cwiseMin(x);
    else if (op.kind == ReduceKind::max)
      acc = acc.cwiseMax(x);
    else
      acc += x;
  }
  if (op.kind == ReduceKind::avg) acc /= static_cast<double>(inputs.size());
  if (op.kind == ReduceKind::custom_avg) acc /= op.denominator;
  return acc;
}

inline ReductionError check_reduction(const std::string& yaml,
                                      const std::vector<std::string>& overrides = {}) {
  const std::string text = run_isolated([&] {
    const Scenario sc = load_scenario_text(yaml, "test.yaml", overrides);
    const Captured run = simulate_capturing(sc);
    ReductionError e;
    for (const auto& [step, inputs] : run.before) {
      const Eigen::VectorXd expected = direct_reduction(inputs, sc.algorithm.op);
      e.reference_scale = std::max(e.reference_scale, expected.cwiseAbs().maxCoeff());
      const auto& outs = run.after.at(step);
      for (const auto& out : outs) {
        if (out.size() != expected.size()) return std::string("size mismatch");
        e.max_abs_error = std::max(e.max_abs_error, (out.cast<double>() - expected).cwiseAbs().maxCoeff());
        e.max_rank_spread =
            std::max(e.max_rank_spread, static_cast<double>((out - outs[0]).cwiseAbs().maxCoeff()));
        ++e.checked_vectors;
      }
    }
    return fmt::format("{} {} {} {}", e.max_abs_error, e.max_rank_spread, e.reference_scale,
                       e.checked_vectors);
  });
  std::istringstream in(text);
  ReductionError e;
  if (!(in >> e.max_abs_error >> e.max_rank_spread >> e.reference_scale >> e.checked_vectors))
    throw std::runtime_error("reduction check failed: " + text);
  return e;
}

// Runs a scenario in a child and returns its per-step summaries' step times.
inline std::vector<double> step_times(const std::string& yaml, const std::vector<std::string>& overrides = {},
                                      const std::vector<std::string>& simgrid_args = {}) {
  const std::string text = run_isolated([&] {
    const Scenario sc = load_scenario_text(yaml, "test.yaml", overrides);
    const auto result = simulate(sc, simgrid_args);
    std::string out;
    for (const auto& s : summarize_steps(result.log)) out += fmt::format("{} ", s.step_time_s);
    return out;
  });
  std::istringstream in(text);
  std::vector<double> times;
  for (double t; in >> t;) times.push_back(t);
  if (times.empty()) throw std::runtime_error("no step times: " + text);
  return times;
}

// Float tolerance for a sum of p values of magnitude `scale` in a different order.
inline double summation_tolerance(int p, double scale) {
  return 4.0 * p * 1.2e-7 * std::max(scale, 1.0) * std::sqrt(p);
}

}  // namespace aggsim::test
