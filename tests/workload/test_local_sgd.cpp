// Local SGD (algorithm.every: k): only steps k-1, 2k-1, ... aggregate; the others train locally
// without a message. Checked through the binary against the ring's closed-form traffic, against a
// run without the key, and in process against local SGD computed here step by step.
#include <fmt/format.h>

#include <Eigen/Core>
#include <catch2/catch.hpp>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sim/engine/simulation.hpp"
#include "sim/scenario/scenario_loader.hpp"
#include "sim/workload/options.hpp"
#include "sim/workload/trainer.hpp"
#include "support/cli.hpp"
#include "support/csv.hpp"
#include "support/isolated.hpp"
#include "support/refusal.hpp"
#include "support/scenarios.hpp"
#include "workload_support.hpp"

using namespace aggsim;
using namespace aggsim::test;
namespace fs = std::filesystem;

namespace {

constexpr int kP = 4;

struct RunFiles {
  std::vector<std::map<std::string, std::string>> rows;  // steps.csv, by column name
  nlohmann::json summary;
  std::string steps_csv, summary_json, resolved;
};

RunFiles run_scenario(const std::string& yaml) {
  const auto dir = fresh_dir("local_sgd");
  write_file(dir / "s.yaml", yaml);
  const auto r = run_aggsim({"run", (dir / "s.yaml").string(), "--out", (dir / "out").string(), "-q"});
  REQUIRE(r.exit_code == 0);
  RunFiles f;
  f.steps_csv = read_file(dir / "out" / "steps.csv");
  f.summary_json = read_file(dir / "out" / "summary.json");
  f.resolved = read_file(dir / "out" / "resolved.yaml");
  const auto cells = parse_csv(f.steps_csv);
  for (std::size_t i = 1; i < cells.size(); ++i) {
    REQUIRE(cells[i].size() == cells[0].size());
    std::map<std::string, std::string> row;
    for (std::size_t c = 0; c < cells[0].size(); ++c) row[cells[0][c]] = cells[i][c];
    f.rows.push_back(row);
  }
  f.summary = nlohmann::json::parse(f.summary_json);
  fs::remove_all(dir);
  return f;
}

}  // namespace

TEST_CASE("local SGD sends floor(steps / every) steps' traffic and nothing in between", "[local_sgd]") {
  // A ring all-reduce of S bytes over p ranks sends 2(p-1) chunks of S/p from every rank: 2p(p-1)
  // messages and 2(p-1) S bytes per aggregating step. With every = 3 over 8 steps, steps 2 and 5
  // aggregate, 6 and 7 (a third period left unfinished) do not.
  const int steps = 8, every = 3;
  const double S = 4e6;
  const std::string table = write_layer_table(4, 500, 500, 1e5);  // 4 layers of 1 MB
  for (const std::string scope :
       {"granularity: model", "granularity: layer, bucket: 0B", "granularity: layer, overlap: false"}) {
    INFO(scope);
    const auto yaml = [&](const std::string& extra) {
      return cluster_scenario(kP, steps,
                              fmt::format("model: {{layers: {}, batch: 2}}\nalgorithm: {{name: "
                                          "ring_allreduce, {}{}}}",
                                          table, scope, extra));
    };
    const RunFiles local = run_scenario(yaml(fmt::format(", every: {}", every)));
    const RunFiles dense = run_scenario(yaml(""));
    REQUIRE(local.rows.size() == steps);
    const double buckets = scope == "granularity: model" ? 1 : 4;
    for (int s = 0; s < steps; ++s) {
      INFO("step " << s);
      const auto& row = local.rows[static_cast<std::size_t>(s)];
      const bool communicates = (s + 1) % every == 0;
      CHECK(row.at("communicated") == (communicates ? "1" : "0"));
      CHECK(dense.rows[static_cast<std::size_t>(s)].at("communicated") == "1");
      if (communicates) {
        CHECK(std::stod(row.at("bytes_sent")) == 2 * (kP - 1) * S);
        CHECK(std::stod(row.at("messages")) == buckets * 2 * kP * (kP - 1));
        CHECK(row.at("bytes_sent") == dense.rows[static_cast<std::size_t>(s)].at("bytes_sent"));
        CHECK(std::stod(row.at("comm_time_s")) > 0);
      } else {
        CHECK(row.at("bytes_sent") == "0");
        CHECK(row.at("messages") == "0");
        CHECK(row.at("comm_time_s") == "0");
        CHECK(row.at("exposed_comm_time_s") == "0");
        // A local step is its compute alone.
        CHECK(row.at("step_time_s") == row.at("compute_time_s"));
        // Nothing was aggregated or compressed: those cells are empty, rank_spread is measured.
        CHECK(row.at("agg_error").empty());
        CHECK(row.at("compress_error").empty());
        CHECK_FALSE(row.at("rank_spread").empty());
      }
    }
    const int aggregations = steps / every;
    CHECK(local.summary["steps_communicated"] == aggregations);
    CHECK(dense.summary["steps_communicated"] == steps);
    CHECK(local.summary["bytes_sent"].get<double>() == aggregations * 2 * (kP - 1) * S);
    CHECK(local.summary["messages"].get<double>() == aggregations * buckets * 2 * kP * (kP - 1));
    CHECK(dense.summary["bytes_sent"].get<double>() == steps * 2 * (kP - 1) * S);
    // The bandwidths are those of the mean aggregation, over the steps that aggregated only.
    double comm = 0;
    for (const auto& row : local.rows)
      if (row.at("communicated") == "1") comm += std::stod(row.at("comm_time_s"));
    CHECK(local.summary["algbw_GBps"].get<double>() ==
          Approx(S / (comm / aggregations) / 1e9).epsilon(1e-12));
  }
}

TEST_CASE("every: 1 is the run without the key, byte for byte", "[local_sgd]") {
  const std::string table = write_layer_table(3, 40, 50, 1e3);
  for (const std::string scope : {"granularity: model", "granularity: layer, bucket: 0B"}) {
    INFO(scope);
    const auto yaml = [&](const std::string& extra) {
      return cluster_scenario(kP, 4,
                              fmt::format("model: {{layers: {}}}\nalgorithm: {{name: ring_allreduce, {}{}}}\n"
                                          "workload: {{problem: softmax, dim: 8, classes: 3, eval_every: 1}}",
                                          table, scope, extra));
    };
    const RunFiles with = run_scenario(yaml(", every: 1"));
    const RunFiles without = run_scenario(yaml(""));
    CHECK(with.steps_csv == without.steps_csv);
    CHECK(with.summary_json == without.summary_json);
    CHECK(with.resolved == without.resolved);
    CHECK(with.resolved.find("every: 1\n") != std::string::npos);
  }
}

TEST_CASE("model averaging every k steps: ranks agree after each averaging and drift apart between",
          "[local_sgd][math]") {
  // apply_to: weights under an all-reduce: an averaging step leaves every rank with the same
  // weights (rank_spread 0), a local step moves each rank along its own minibatches (> 0).
  const int every = 3, steps = 9;
  const RunFiles f = run_scenario(cluster_scenario(
      kP, steps,
      fmt::format("model: {{size: 1MB}}\nalgorithm: {{name: ring_allreduce, apply_to: weights, every: {}}}\n"
                  "workload: {{problem: least_squares, dim: 16, batch: 8, lr: 0.1, eval_every: 1}}",
                  every)));
  for (int s = 0; s < steps; ++s) {
    INFO("step " << s);
    const auto& row = f.rows[static_cast<std::size_t>(s)];
    if ((s + 1) % every == 0) {
      CHECK(std::stod(row.at("rank_spread")) == 0);
      CHECK_FALSE(row.at("agg_error").empty());
    } else {
      CHECK(std::stod(row.at("rank_spread")) > 1e-4);
      CHECK(std::stod(row.at("consensus_distance")) > 0);  // reported: the ranks are apart
    }
  }
}

TEST_CASE("local SGD follows per-rank SGD with periodic averaging computed here", "[local_sgd][math]") {
  // Each rank r steps along its own minibatch gradient g_r(w_r); on steps k-1, 2k-1, ... the ranks
  // average their weights (apply_to: weights) or step along the mean gradient (apply_to: gradients,
  // where the ranks' weights stay apart). With one rank any period is plain SGD.
  const int steps = 7;
  for (const std::string apply_to : {"weights", "gradients"}) {
    for (const int p : {1, kP}) {
      for (const int every : {1, 2, 3}) {
        INFO(apply_to << ", " << p << " ranks, every " << every);
        const std::string yaml = cluster_scenario(
            p, steps,
            fmt::format("model: {{size: 1MB}}\nalgorithm: {{name: ring_allreduce, apply_to: {}, every: {}}}\n"
                        "workload: {{problem: least_squares, dim: 12, batch: 8, lr: 0.1}}",
                        apply_to, every));
        const std::string text = run_isolated([&] {
          const Scenario sc = load_scenario_text(yaml, "test.yaml");
          const auto by_step = weights_after_each_step(sc);

          const WorkloadOptions o = sc.workload.options;
          const Workload wl(o, sc.seed);
          std::vector<Eigen::VectorXd> w(static_cast<std::size_t>(p), wl.initial_weights.cast<double>());
          double worst = 0;
          for (int s = 0; s < steps; ++s) {
            std::vector<Eigen::VectorXd> g;
            for (int r = 0; r < p; ++r) {
              const Batch batch = wl.data.minibatch(r, s, wl.data.class_mix(r));
              Eigen::VectorXf gr;
              wl.problem->loss(w[static_cast<std::size_t>(r)].cast<float>(), batch, &gr);
              g.push_back(gr.cast<double>());
            }
            const bool averages = (s + 1) % every == 0;
            Eigen::VectorXd mean_g = Eigen::VectorXd::Zero(g[0].size());
            for (const auto& gr : g) mean_g += gr / p;
            for (int r = 0; r < p; ++r) {
              auto& wr = w[static_cast<std::size_t>(r)];
              wr -= o.lr * (averages && apply_to == "gradients" ? mean_g : g[static_cast<std::size_t>(r)]);
            }
            if (averages && apply_to == "weights") {
              Eigen::VectorXd mean_w = Eigen::VectorXd::Zero(w[0].size());
              for (const auto& wr : w) mean_w += wr / p;
              for (auto& wr : w) wr = mean_w;
            }
            for (int r = 0; r < p; ++r) {
              const auto& wr = w[static_cast<std::size_t>(r)];
              const Eigen::VectorXd got = by_step.at(s).at(static_cast<std::size_t>(r)).cast<double>();
              worst = std::max(worst, (got - wr).cwiseAbs().maxCoeff() / wr.cwiseAbs().maxCoeff());
            }
          }
          return fmt::format("{}", worst);
        });
        CHECK(std::stod(text) < 1e-5);
      }
    }
  }
}

TEST_CASE("local SGD with one rank trains exactly as plain SGD", "[local_sgd][math]") {
  // One rank's all-reduce returns its own vector: every period gives the same losses.
  const auto yaml = [](int every) {
    return cluster_scenario(
        1, 6,
        fmt::format("model: {{size: 1MB}}\nalgorithm: {{name: ring_allreduce, every: {}}}\n"
                    "workload: {{problem: softmax, dim: 8, classes: 3, eval_every: 1}}",
                    every));
  };
  const RunFiles plain = run_scenario(yaml(1)), local = run_scenario(yaml(4));
  for (std::size_t s = 0; s < plain.rows.size(); ++s)
    CHECK(local.rows[s].at("loss") == plain.rows[s].at("loss"));
}

TEST_CASE("local SGD with gossip and a parameter server skips the exchange on local steps", "[local_sgd]") {
  // The same steps aggregate as under every: 1 (bytes equal row by row); the others send nothing.
  for (const std::string algorithm :
       {"parameter_server", "parameter_server, servers: 2, placement: dedicated", "neighbor_averaging",
        "gossipgrad"}) {
    INFO(algorithm);
    const int ranks = algorithm.find("dedicated") != std::string::npos ? kP + 2 : kP;
    const auto yaml = [&](int every) {
      return cluster_scenario(
          ranks, 6,
          fmt::format("model: {{size: 1MB}}\nalgorithm: {{name: {}, every: {}}}", algorithm, every));
    };
    const RunFiles local = run_scenario(yaml(2)), dense = run_scenario(yaml(1));
    for (std::size_t s = 0; s < 6; ++s) {
      INFO("step " << s);
      if (s % 2 == 1)
        CHECK(local.rows[s].at("bytes_sent") == dense.rows[s].at("bytes_sent"));
      else
        CHECK(local.rows[s].at("bytes_sent") == "0");
    }
    CHECK(local.summary["steps_communicated"] == 3);
  }
}

namespace {

std::string four_steps() {
  std::string text = kSmallScenario;
  return text.replace(text.find("steps: 1"), 8, "steps: 4");
}

struct BadEvery {
  std::string value;     // algorithm.every's text
  std::string name;      // replaces kSmallScenario's last line (`  name: ring_allreduce`) when given
  std::string expected;  // in stderr
};

}  // namespace

TEST_CASE("bad algorithm.every values are input errors at the key", "[local_sgd][bad_input]") {
  // every goes on the line after the algorithm's name: line 13, or 14 after a two-line name.
  const std::string async_ps = "  name: parameter_server\n  asynchronous: true";
  const std::string async_gossip = "  name: neighbor_averaging\n  asynchronous: true";
  const std::vector<BadEvery> cases = {
      {"0", "", "bad.yaml:13:10: algorithm.every: must be an integer in [1,"},
      {"-2", "", "bad.yaml:13:10: algorithm.every: must be an integer in [1,"},
      {"1.5", "", "bad.yaml:13:10: algorithm.every: must be an integer"},
      {"often", "", "bad.yaml:13:10: algorithm.every: must be an integer"},
      {"5", "", "bad.yaml:13:10: algorithm.every: 5 is more than steps (4): no step would aggregate"},
      {"2", async_ps, "bad.yaml:14:10: algorithm.every: 2 with asynchronous: true is not modelled"},
      {"2", async_gossip, "bad.yaml:14:10: algorithm.every: 2 with asynchronous: true is not modelled"},
  };
  for (const auto& c : cases) {
    INFO("every: " << c.value << " " << c.name);
    std::string text = four_steps();
    if (!c.name.empty()) text.replace(text.find("  name: ring_allreduce\n"), 23, c.name + "\n");
    check_refused(text + "  every: " + c.value + "\n", {c.expected});
  }
  // every == steps is one aggregation, on the last step; the synchronous schemes take any period.
  const auto dir = fresh_dir("every_steps");
  write_file(dir / "ok.yaml", four_steps() + "  every: 4\n");
  CHECK(run_aggsim({"validate", "ok.yaml"}, dir).exit_code == 0);
  fs::remove_all(dir);
}
