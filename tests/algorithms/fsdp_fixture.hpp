#pragma once
// What the fsdp tests share: a small platform and layer table, the MLP scenario, and runs that return
// the ranks' weights and losses or the bytes and times of each step.
#include <fmt/format.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <utility>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "alpha_beta.hpp"  // kAlpha, kBeta of this platform
#include "sim/engine/simulation.hpp"
#include "sim/scenario/scenario_loader.hpp"
#include "support/cli.hpp"
#include "support/csv.hpp"
#include "support/isolated.hpp"

namespace aggsim::test::fsdp {

// Three layers of 640, 1280 and 1920 parameters (3840 in all): every unit, and every half of one,
// divides by 8 ranks, so ring chunks are equal and the closed forms hold exactly.
inline std::string layer_table(double forward_flops = 0) {
  const auto path = fresh_dir("fsdp-layers") / "three.yaml";
  write_file(path, fmt::format(R"(name: three
layers:
  - {{name: a, shape: [20, 32], forward_flops: {0}}}
  - {{name: b, shape: [40, 32], forward_flops: {0}}}
  - {{name: c, shape: [60, 32], forward_flops: {0}}}
)",
                               forward_flops));
  return path.string();
}
constexpr double kModelElements = 3840;

inline std::string scenario(int p, int steps, const std::string& algorithm, const std::string& rest) {
  return fmt::format(R"(
seed: 5
ranks: {}
steps: {}
platform: {{topology: cluster, hosts: {}, bandwidth: 10Gbps, latency: 1us, speed: 1Gf}}
network: alpha_beta
compute: {{reduce_speed: 0}}
algorithm: {{{}}}
{}
)",
                     p, steps, p, algorithm, rest);
}

// The MLP trained for 4 steps on `p` ranks with `algorithm`; `extra`: more top-level keys.
inline std::string mlp_scenario(int p, const std::string& algorithm, const std::string& extra = "") {
  return scenario(p, 4, algorithm,
                  fmt::format("model: {{layers: {}}}\n"
                              "workload: {{problem: mlp, dim: 8, hidden: 6, classes: 3, batch: 4, "
                              "eval_every: 1, momentum: 0.5}}\n{}",
                              layer_table(), extra));
}

// Every rank's weights after every step (step -> rank -> weights) and the evaluated losses.
struct Trained {
  std::map<int, std::vector<std::vector<float>>> weights;
  std::vector<double> losses;
};

inline Trained train(const std::string& yaml) {
  const std::string text = run_isolated([&] {
    const Scenario sc = load_scenario_text(yaml, "test.yaml");
    std::map<int, std::vector<Eigen::VectorXf>> by_step;
    SimulationHooks hooks;
    hooks.after_step = [&](int rank, int step, const Eigen::VectorXf& w) {
      by_step[step].resize(static_cast<std::size_t>(sc.ranks));
      by_step[step][static_cast<std::size_t>(rank)] = w;
    };
    const SimulationResult r = simulate(sc, {}, hooks);
    std::ostringstream out;
    out.precision(17);
    for (const auto& e : r.evaluations) out << "L " << e.loss << "\n";
    for (const auto& [step, ranks] : by_step)
      for (std::size_t k = 0; k < ranks.size(); ++k) {
        out << "W " << step << " " << k << " " << ranks[k].size();
        for (float v : ranks[k]) out << " " << v;
        out << "\n";
      }
    return out.str();
  });
  Trained t;
  std::istringstream in(text);
  for (std::string tag; in >> tag;) {
    if (tag == "L") {
      double loss;
      in >> loss;
      t.losses.push_back(loss);
      continue;
    }
    int step, rank;
    std::size_t n;
    in >> step >> rank >> n;
    std::vector<float> w(n);
    for (float& v : w) in >> v;
    auto& ranks = t.weights[step];
    ranks.resize(static_cast<std::size_t>(rank) + 1);
    ranks[static_cast<std::size_t>(rank)] = std::move(w);
  }
  return t;
}

// Each rank's bytes sent in step 0, the step times and the exposed gathers of each step.
struct Traffic {
  std::vector<double> bytes;
  std::vector<double> step_times;
  std::vector<double> exposed_gathers;
};

inline Traffic traffic(const std::string& yaml) {
  const std::string text = run_isolated([&] {
    const Scenario sc = load_scenario_text(yaml, "test.yaml");
    const SimulationResult r = simulate(sc, {});
    std::string out;
    for (int rank = 0; rank < sc.ranks; ++rank) out += fmt::format("B {} ", r.log.at(rank, 0).bytes_sent);
    for (const auto& s : summarize_steps(r.log))
      out += fmt::format("T {:.17g} G {:.17g} ", s.step_time_s, s.exposed_gather_time_s.value_or(-1));
    return out;
  });
  Traffic t;
  std::istringstream in(text);
  for (std::string tag; in >> tag;) {
    double v;
    in >> v;
    (tag == "B" ? t.bytes : tag == "T" ? t.step_times : t.exposed_gathers).push_back(v);
  }
  return t;
}

// The largest difference between two runs' weights, and the largest weight of `reference`.
inline std::pair<double, double> weight_gap(const Trained& run, const Trained& reference) {
  double largest = 0, scale = 0;
  for (const auto& [step, ranks] : reference.weights)
    for (std::size_t r = 0; r < ranks.size(); ++r) {
      const auto& mine = run.weights.at(step).at(r);
      REQUIRE(mine.size() == ranks[r].size());
      for (std::size_t i = 0; i < mine.size(); ++i) {
        largest = std::max(largest, static_cast<double>(std::abs(mine[i] - ranks[r][i])));
        scale = std::max(scale, static_cast<double>(std::abs(ranks[r][i])));
      }
    }
  return {largest, scale};
}

// fsdp against DDP with the same units: the same weights and losses, bit for bit, where both add in
// one order; hybrid adds in another (two rings of 2 instead of one of 4): its weights within 4 steps
// x 4 ranks x 2^-23 of their scale, its losses within 1e-5.
inline void check_as_ddp(const Trained& fsdp, const Trained& ddp, const std::string& sharding) {
  REQUIRE(fsdp.weights.size() == ddp.weights.size());
  REQUIRE(fsdp.losses.size() == ddp.losses.size());
  const auto [largest, scale] = weight_gap(fsdp, ddp);
  if (sharding == "hybrid") {
    CHECK(largest <= 4 * 4 * std::ldexp(1.0, -23) * scale);
    for (std::size_t i = 0; i < ddp.losses.size(); ++i) CHECK(fsdp.losses[i] == Approx(ddp.losses[i]).epsilon(1e-5));
  } else {
    CHECK(largest == 0.0);
    CHECK(fsdp.losses == ddp.losses);
  }
}

inline const std::vector<std::string> kShardings = {"full", "grad_op", "optimizer", "hybrid"};

// collectives.csv of one `aggsim run` of `yaml` (which must succeed): its header line and its rows by
// column name.
struct CollectivesCsv {
  std::string header;
  std::vector<std::map<std::string, std::string>> rows;
};
inline CollectivesCsv run_collectives_csv(const std::string& yaml, const std::string& dir_tag) {
  const auto dir = fresh_dir(dir_tag);
  write_file(dir / "s.yaml", yaml);
  const auto r = run_aggsim({"run", "s.yaml", "--out", "out", "-q"}, dir);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const std::string text = read_file(dir / "out" / "collectives.csv");
  return {text.substr(0, text.find('\n')), read_csv_rows(text)};
}

}  // namespace aggsim::test::fsdp
