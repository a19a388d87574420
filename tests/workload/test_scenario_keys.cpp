// The training keys of a scenario: checked with file:line:col errors, written back in
// resolved.yaml, and the columns a training run adds to steps.csv and summary.json.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <optional>

#include "sim/core/error.hpp"
#include "sim/scenario/scenario_loader.hpp"
#include "support/cli.hpp"
#include "workload_support.hpp"

using namespace aggsim;
using namespace aggsim::test;

namespace {

std::string base(const std::string& rest) {
  return cluster_scenario(4, 2, "model: {size: 1MB}\nalgorithm: {name: ring_allreduce}\n" + rest);
}

std::string load_error(const std::string& yaml, const std::vector<std::string>& overrides = {}) {
  try {
    load_scenario_text(yaml, "t.yaml", overrides);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("the loader decodes workload and straggler keys once, into the scenario's typed options",
          "[workload][scenario]") {
  const Scenario sc = load_scenario_text(
      base("workload: {problem: mlp, hidden: 12, lr: 0.125, momentum: 0.5, target_loss: 0.25}\n"
           "compute: {straggler: {distribution: exponential, mean: 2, probability: 0.75}}\n"),
      "t.yaml");
  CHECK(sc.workload.enabled);
  CHECK(sc.workload.options.problem == ProblemKind::mlp);
  CHECK(sc.workload.options.hidden == 12);
  CHECK(sc.workload.options.lr == 0.125);
  CHECK(sc.workload.options.momentum == 0.5);
  REQUIRE(sc.workload.options.target_loss);
  CHECK(*sc.workload.options.target_loss == 0.25);
  CHECK(sc.compute.straggler.kind == StragglerKind::exponential);
  CHECK(sc.compute.straggler.mean == 2);
  CHECK(sc.compute.straggler.probability == 0.75);
  // Without the sections: no workload, and compute times without noise.
  const Scenario plain = load_scenario_text(base(""), "t.yaml");
  CHECK_FALSE(plain.workload.enabled);
  CHECK(plain.compute.straggler.kind == StragglerKind::none);
}

TEST_CASE("the loader decodes a generated platform's shape once, onto the scenario", "[workload][scenario]") {
  const auto platform = [](const std::string& spec) {
    return load_scenario_text("ranks: 8\nplatform: " + spec + "\nalgorithm: {name: ring_allreduce}\n",
                              "t.yaml")
        .platform;
  };
  const PlatformSpec by_nodes = platform("{topology: cluster, nodes: 2, gpus_per_node: 4}");
  CHECK(by_nodes.shape.gpus_per_node == 4);
  CHECK_FALSE(by_nodes.shape.sized_by_hosts);
  const PlatformSpec by_hosts = platform("{topology: cluster, hosts: 8}");
  CHECK(by_hosts.shape.gpus_per_node == 1);
  CHECK(by_hosts.shape.sized_by_hosts);
}

TEST_CASE("training keys are checked with their position", "[workload][scenario]") {
  using Catch::Matchers::Contains;
  CHECK_THAT(load_error(base("workload: {problem: svm}")),
             Contains("t.yaml:9:") && Contains("workload.problem"));
  CHECK_THAT(load_error(base("workload: {problem: mlp, batchsize: 3}")),
             Contains("workload.batchsize") && Contains("unknown key"));
  CHECK_THAT(load_error(base("workload: {problem: mlp, lr: -1}")), Contains("workload.lr"));
  CHECK_THAT(load_error(base("compute: {speed_factors: [1, 2]}")),
             Contains("t.yaml:9:") && Contains("compute.speed_factors") && Contains("one per rank"));
  CHECK_THAT(load_error(base("compute: {speed_factors: {slow_ranks: [9], factor: 0.5}}")),
             Contains("compute.speed_factors.slow_ranks"));
  CHECK_THAT(load_error(base("compute: {straggler: {distribution: gamma}}")),
             Contains("compute.straggler.distribution"));
  CHECK_THAT(load_error(base(""), {"algorithm.granularity=bucket"}), Contains("algorithm.granularity"));
  CHECK_THAT(load_error(base(""), {"algorithm.apply_to=models"}), Contains("algorithm.apply_to"));
  const std::string no_size =
      cluster_scenario(4, 1, "model: {layers: nowhere.yaml}\nalgorithm: {name: ring_allreduce}");
  CHECK_THAT(load_error(no_size), Contains("t.yaml:7:17") && Contains("layer table file not found"));
  // A table given by --set replaces the file's size (with a note); a file giving both is refused.
  CHECK_THAT(load_error(base(""), {"model.layers=nowhere.yaml"}), Contains("layer table file not found"));
  CHECK_THAT(load_error(cluster_scenario(
                 4, 2, "model: {size: 1MB, layers: lenet}\nalgorithm: {name: ring_allreduce}\n")),
             Contains("model.size") && Contains("one or the other"));
  CHECK_THAT(load_error(base("workload: {problem: mlp}"), {"model.proxy_dim=5"}),
             Contains("model.proxy_dim"));
  CHECK_THAT(load_error(base("workload: {problem: mlp}"), {"model.math=off"}), Contains("math: on"));
  // Errors inside a layer table point into that file.
  const auto bad = fresh_dir("badtable") / "bad.yaml";
  write_file(
      bad,
      "name: bad\nlayers:\n  - {name: a, shape: [3, 4], forward_flops: 10}\n  - {name: b, shape: [3]}\n");
  CHECK_THAT(load_error(no_size, {"model.layers=" + bad.string()}),
             Contains(bad.string() + ":4:") && Contains("forward_flops"));
}

TEST_CASE("bad straggler settings are rejected at their position", "[workload][scenario][stragglers]") {
  using Catch::Matchers::Contains;
  // Each text is line 9 of the scenario; the error names the key and points at `at`'s column.
  struct Bad {
    std::string text, key, at;
  };
  const std::vector<Bad> bad = {
      {"compute: {straggler: {distribution: pareto}}", "distribution", "pareto"},
      {"compute: {straggler: {distribution: lognormal, sigma: -0.3}}", "sigma", "-0.3"},
      {"compute: {straggler: {distribution: exponential, mean: -2}}", "mean", "-2"},
      {"compute: {straggler: {distribution: exponential, probability: 1.5}}", "probability", "1.5"},
      {"compute: {straggler: {distribution: lognormal, probability: -0.1}}", "probability", "-0.1"},
      {"compute: {straggler: {distribution: lognormal, scale: 2}}", "scale", "scale"},
  };
  for (const Bad& b : bad) {
    INFO(b.text);
    const std::string where = fmt::format("t.yaml:9:{}", b.text.find(b.at) + 1);
    CHECK_THAT(load_error(base(b.text)), Contains(where) && Contains("compute.straggler." + b.key));
  }
}

TEST_CASE("the bucket size is in decimal units by default, 25MiB for PyTorch DDP's", "[workload][scenario]") {
  // PyTorch DDP's bucket_cap_mb = 25 means 25 * 1024 * 1024 bytes; our documented default 25MB is 25e6.
  CHECK(load_scenario_text(base(""), "t.yaml").algorithm.bucket_bytes == 25'000'000);
  CHECK(load_scenario_text(base(""), "t.yaml", {"algorithm.bucket=25MiB"}).algorithm.bucket_bytes ==
        25 * 1024 * 1024);
}

TEST_CASE("resolved.yaml of a training scenario loads back to the same scenario", "[workload][scenario]") {
  const std::string table = write_layer_table(3, 10, 10, 100);
  const std::string yaml = cluster_scenario(
      4, 2,
      fmt::format("model: {{layers: {}, batch: 16}}\nalgorithm: {{name: ring_allreduce, granularity: layer, "
                  "bucket: 1kB}}\n"
                  "workload: {{problem: softmax, dim: 9, noniid_alpha: 0.5, target_loss: 0.3}}\n"
                  "compute: {{speed_factors: {{slow_ranks: [1, 3], factor: 0.25}}, "
                  "straggler: {{distribution: lognormal, sigma: 0.2}}}}",
                  table));
  const Scenario sc = load_scenario_text(yaml, "t.yaml");
  CHECK(sc.model.proxy_dim == 10 * 9 + 10);
  CHECK(sc.model.size_bytes == 3 * 100 * 4);
  CHECK(sc.algorithm.apply_to == ApplyTo::gradients);
  CHECK(sc.compute.speed.of(3) == 0.25);
  CHECK(sc.compute.speed.of(2) == 1.0);
  const std::string once = resolved_yaml(sc);
  CHECK(resolved_yaml(load_scenario_text(once, "resolved.yaml")) == once);
}

TEST_CASE("a training run writes loss columns and time to target", "[workload][outputs]") {
  const auto dir = fresh_dir("trainrun");
  write_file(dir / "s.yaml", base("workload: {problem: logistic, dim: 8, batch: 16, lr: 0.5, eval_every: 3, "
                                  "target_loss: 0.6}"));
  const auto r = run_aggsim(
      {"run", (dir / "s.yaml").string(), "--out", (dir / "out").string(), "-q", "--set", "steps=9"});
  REQUIRE(r.exit_code == 0);
  const auto rows = csv_rows(read_file(dir / "out" / "steps.csv"));
  REQUIRE(rows.size() == 10);
  CHECK(rows[0] == std::vector<std::string>{"step", "step_time_s", "comm_time_s", "compute_time_s",
                                            "end_time_s", "bytes_sent", "messages", "loss", "accuracy",
                                            "consensus_distance", "exposed_comm_time_s", "algbw_GBps",
                                            "busbw_GBps", "agg_error", "agg_signed_error", "compress_error",
                                            "rank_spread", "communicated", "hidden_comm_time_s", "exposed_gather_time_s"});
  std::optional<double> first_hit;
  for (int s = 0; s < 9; ++s) {
    const auto& row = rows[static_cast<std::size_t>(s + 1)];
    REQUIRE(row.size() == 20);
    const bool evaluated = s % 3 == 2;
    CHECK(row[7].empty() == !evaluated);
    CHECK(row[8].empty() == !evaluated);
    CHECK(row[9].empty());             // all-reduce keeps every rank identical: no spread to report
    CHECK(std::stod(row[16]) == 0.0);  // the math plane's rank_spread says the same
    CHECK(row[17] == "1");             // every step aggregates (no algorithm.every)
    if (evaluated && !first_hit && std::stod(row[7]) <= 0.6) first_hit = std::stod(row[4]);
  }
  const auto j = nlohmann::json::parse(read_file(dir / "out" / "summary.json"));
  CHECK(j["final_loss"].get<double>() == std::stod(rows[9][7]));
  CHECK(j["final_loss"].get<double>() < 0.6931);  // below log 2, the loss at w = 0
  REQUIRE(first_hit);
  CHECK(j["time_to_target_s"].get<double>() == *first_hit);
  // An unreachable target gives null.
  const auto r2 = run_aggsim({"run", (dir / "s.yaml").string(), "--out", (dir / "out2").string(), "-q",
                              "--set", "workload.target_loss=0.001"});
  REQUIRE(r2.exit_code == 0);
  CHECK(nlohmann::json::parse(read_file(dir / "out2" / "summary.json"))["time_to_target_s"].is_null());
}
