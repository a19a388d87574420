#pragma once
// Scenario text and layer tables shared by the workload tests.
#include <fmt/format.h>

#include <Eigen/Core>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "sim/engine/simulation.hpp"
#include "support/cli.hpp"

namespace aggsim::test {

// Simulates `sc` and returns every rank's weights after every step (step -> rank -> weights).
inline std::map<int, std::vector<Eigen::VectorXf>> weights_after_each_step(const Scenario& sc) {
  std::map<int, std::vector<Eigen::VectorXf>> by_step;
  SimulationHooks hooks;
  hooks.after_step = [&](int rank, int step, const Eigen::VectorXf& w) {
    by_step[step].resize(static_cast<std::size_t>(sc.ranks));
    by_step[step][static_cast<std::size_t>(rank)] = w;
  };
  simulate(sc, {}, hooks);
  return by_step;
}

// A layer table of `layers` equal layers of rows x cols parameters and `forward_flops` per sample.
inline std::string write_layer_table(int layers, int rows, int cols, double forward_flops) {
  std::string text = "name: uniform\nlayers:\n";
  for (int i = 0; i < layers; ++i)
    text +=
        fmt::format("  - {{name: l{}, shape: [{}, {}], forward_flops: {}}}\n", i, rows, cols, forward_flops);
  const auto path = fresh_dir("layers") / "uniform.yaml";
  write_file(path, text);
  return path.string();
}

// p hosts on one switch: a transfer costs 2 us + bytes / 1.25e9 s under alpha_beta; hosts at `speed`.
inline std::string cluster_scenario(int p, int steps, const std::string& rest,
                                    const std::string& speed = "1Gf") {
  return fmt::format(R"(
seed: 5
ranks: {p}
steps: {steps}
platform: {{topology: cluster, hosts: {p}, bandwidth: 10Gbps, latency: 1us, speed: {speed}}}
network: alpha_beta
{rest}
)",
                     fmt::arg("p", p), fmt::arg("steps", steps), fmt::arg("speed", speed),
                     fmt::arg("rest", rest));
}

constexpr double kAlpha = 2e-6;     // two 1 us links
constexpr double kBeta = 10e9 / 8;  // bytes per second

// Ring all-reduce of `bytes` over p ranks (Patarasuk & Yuan): 2(p-1)(alpha + bytes/(p beta)).
inline double ring_cost(int p, double bytes) {
  return 2.0 * (p - 1) * (kAlpha + bytes / p / kBeta);
}

// The cells of a CSV text, row by row (a trailing comma gives a last, empty cell).
inline std::vector<std::vector<std::string>> csv_rows(const std::string& csv) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream lines(csv);
  for (std::string line; std::getline(lines, line);) {
    std::vector<std::string> cells;
    std::string cell;
    std::istringstream in(line);
    while (std::getline(in, cell, ',')) cells.push_back(cell);
    if (!line.empty() && line.back() == ',') cells.push_back("");
    rows.push_back(cells);
  }
  return rows;
}

}  // namespace aggsim::test
