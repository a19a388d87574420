#pragma once
// Runs a scenario in a child process and brings back, bit for bit, every rank's vector before and
// after each aggregation, the step times, the message count and the algorithm's summary fields.
#include <fmt/format.h>

#include <Eigen/Core>
#include <cstring>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "algorithms/registry.hpp"
#include "sim/engine/simulation.hpp"
#include "sim/scenario/scenario_loader.hpp"
#include "support/isolated.hpp"

namespace aggsim::test {

struct StepVectors {
  std::vector<Eigen::VectorXf> before, after;  // by rank
};

struct GossipRun {
  std::vector<StepVectors> steps;
  std::vector<double> step_times;
  std::uint64_t messages = 0;
  std::map<std::string, double> fields;  // the algorithm's summary fields
};

inline GossipRun run_gossip(const std::string& yaml, const std::vector<std::string>& overrides = {}) {
  const std::string text = run_isolated([&] {
    const Scenario sc = load_scenario_text(yaml, "test.yaml", overrides);
    std::vector<StepVectors> steps(static_cast<std::size_t>(sc.steps));
    for (auto& s : steps) {
      s.before.resize(static_cast<std::size_t>(sc.ranks));
      s.after.resize(static_cast<std::size_t>(sc.ranks));
    }
    SimulationHooks hooks;
    hooks.after_aggregate = [&](int rank, int step, const Eigen::VectorXf& in, const Eigen::VectorXf& out) {
      steps[static_cast<std::size_t>(step)].before[static_cast<std::size_t>(rank)] = in;
      steps[static_cast<std::size_t>(step)].after[static_cast<std::size_t>(rank)] = out;
    };
    const SimulationResult result = simulate(sc, {}, hooks);
    std::ostringstream out;
    const std::vector<SummaryField>& fields = result.summary_fields;
    out << fields.size() << "\n";
    for (const auto& f : fields) out << f.key << " " << fmt::format("{}", f.value) << "\n";
    out << result.messages_sent << "\n";
    const auto summaries = summarize_steps(result.log);
    out << summaries.size() << "\n";
    for (const auto& s : summaries) out << fmt::format("{} ", s.step_time_s);
    out << "\n" << sc.ranks << " " << sc.steps << " " << (sc.model.math ? sc.model.proxy_dim : 0) << "\n";
    auto bits = [&](const Eigen::VectorXf& v) {
      for (Eigen::Index i = 0; i < v.size(); ++i) {
        std::uint32_t u;
        std::memcpy(&u, &v[i], sizeof u);
        out << u << " ";
      }
    };
    for (const auto& s : steps)
      for (int r = 0; r < sc.ranks; ++r) {
        bits(s.before[static_cast<std::size_t>(r)]);
        bits(s.after[static_cast<std::size_t>(r)]);
      }
    return out.str();
  });
  std::istringstream in(text);
  GossipRun run;
  std::size_t nfields = 0;
  if (!(in >> nfields)) throw std::runtime_error("gossip run failed: " + text);
  for (std::size_t i = 0; i < nfields; ++i) {
    std::string key, value;
    in >> key >> value;
    run.fields[key] = std::stod(value);  // "nan" parses to NaN
  }
  std::size_t nsteps = 0;
  in >> run.messages >> nsteps;
  run.step_times.resize(nsteps);
  for (auto& t : run.step_times) in >> t;
  int ranks = 0, steps = 0;
  long dim = 0;
  in >> ranks >> steps >> dim;
  run.steps.resize(static_cast<std::size_t>(steps));
  auto read = [&] {
    Eigen::VectorXf v(dim);
    for (long i = 0; i < dim; ++i) {
      std::uint32_t u = 0;
      in >> u;
      std::memcpy(&v[i], &u, sizeof u);
    }
    return v;
  };
  for (auto& s : run.steps)
    for (int r = 0; r < ranks; ++r) {
      s.before.push_back(read());
      s.after.push_back(read());
    }
  if (!in) throw std::runtime_error("gossip run output truncated");
  return run;
}

// Mean over ranks, in double.
inline Eigen::VectorXd rank_mean(const std::vector<Eigen::VectorXf>& xs) {
  Eigen::VectorXd m = Eigen::VectorXd::Zero(xs.front().size());
  for (const auto& x : xs) m += x.cast<double>();
  return m / static_cast<double>(xs.size());
}

// Consensus distance: sum over ranks of ||x_i - mean||^2.
inline double consensus_distance(const std::vector<Eigen::VectorXf>& xs) {
  const Eigen::VectorXd m = rank_mean(xs);
  double d = 0;
  for (const auto& x : xs) d += (x.cast<double>() - m).squaredNorm();
  return d;
}

}  // namespace aggsim::test
