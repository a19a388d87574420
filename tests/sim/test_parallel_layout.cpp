// Data-parallel groups of a tensor x pipeline x data layout (`parallel`): the ranks are ordered as
// Megatron-LM orders them, pipeline stages are the contiguous split of the layer table with the
// smallest largest stage, every group sends the closed-form bytes of its part of the model, groups on
// separate rails (or stages on separate nodes) take the time of one group alone and groups sharing a
// NIC do not, the math plane under a layout trains as data parallelism of degree D does, and a
// layout that does not divide the ranks or the model is refused at its key.
#include <fmt/format.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "sim/engine/parallel_layout.hpp"
#include "sim/engine/simulation.hpp"
#include "sim/scenario/scenario_loader.hpp"
#include "support/cli.hpp"
#include "support/isolated.hpp"
#include "support/refusal.hpp"

using namespace aggsim;
using namespace aggsim::test;

namespace {

// 8 nodes of 8 GPUs with 8 NICs (one per rail) or one, the fabric as fast as a NIC.
std::string rails(int nics, const std::string& algorithm, const std::string& size,
                  const std::string& extra = "") {
  return fmt::format(R"(
seed: 3
ranks: 64
steps: 2
platform: {{topology: cluster, nodes: 8, gpus_per_node: 8, nics_per_node: {}, nic_bandwidth: 100Gbps,
           bandwidth: 100Gbps, latency: 1us}}
network: alpha_beta
compute: {{reduce_speed: 0}}
model: {{size: {}, math: off}}
algorithm: {{{}}}
parallel: {{tensor: 8}}
{}
)",
                     nics, size, algorithm, extra);
}

// One data-parallel group alone: 8 single-GPU nodes, each GPU with its own NIC as fast as a rail's.
std::string one_group(const std::string& algorithm, const std::string& size) {
  return fmt::format(R"(
seed: 3
ranks: 8
steps: 2
platform: {{topology: cluster, nodes: 8, nic_bandwidth: 100Gbps, bandwidth: 100Gbps, latency: 1us}}
network: alpha_beta
compute: {{reduce_speed: 0}}
model: {{size: {}, math: off}}
algorithm: {{{}}}
)",
                     size, algorithm);
}

struct Measured {
  double step_time = 0;
  std::vector<double> bytes;  // each rank's bytes sent in step 0 (of two: the last step of fsdp
                              // also gathers the final weights)
};

// The numbers of an isolated run's "TAG value TAG value ..." text, by tag.
std::map<std::string, std::vector<double>> by_tag(const std::string& text) {
  std::map<std::string, std::vector<double>> out;
  std::istringstream in(text);
  for (std::string tag; in >> tag;) in >> out[tag].emplace_back();
  return out;
}

Measured measure(const std::string& yaml) {
  const std::string text = run_isolated([&] {
    const Scenario sc = load_scenario_text(yaml, "test.yaml");
    const SimulationResult r = simulate(sc, {});
    std::string out = fmt::format("T {:.17g} ", summarize_steps(r.log).front().step_time_s);  // step 0
    for (int rank = 0; rank < sc.ranks; ++rank) out += fmt::format("B {} ", r.log.at(rank, 0).bytes_sent);
    return out;
  });
  auto tagged = by_tag(text);
  Measured m;
  m.step_time = tagged["T"].at(0);
  m.bytes = tagged["B"];
  return m;
}

}  // namespace

TEST_CASE("a parallel layout's data-parallel groups follow Megatron-LM's rank order", "[parallel]") {
  // Megatron-LM (megatron/core/parallel_state.py, order tp-cp-ep-dp-pp): ranks are numbered with the
  // tensor rank fastest, then the data rank, then the pipeline stage. Count them off in that order
  // and check every rank's place against the count.
  for (const auto& [tensor, pipeline, data] : std::vector<std::tuple<int, int, int>>{
           {1, 1, 4}, {8, 1, 8}, {2, 3, 4}, {4, 2, 1}, {1, 4, 3}, {3, 1, 5}}) {
    ParallelSpec parallel;
    parallel.tensor = tensor;
    parallel.pipeline = pipeline;
    const int ranks = tensor * pipeline * data;
    int counted = 0;
    for (int p = 0; p < pipeline; ++p)
      for (int d = 0; d < data; ++d)
        for (int t = 0; t < tensor; ++t, ++counted) {
          INFO("tensor " << tensor << " pipeline " << pipeline << " data " << data << " rank " << counted);
          const DataParallelPlace place = data_parallel_place(parallel, ranks, counted);
          CHECK(place.data_rank == d);
          CHECK(place.group_size == data);
          CHECK(place.group == t + tensor * p);
          // The group's members are the ranks of equal (t, p), in data order.
          for (int k = 0; k < data; ++k) CHECK(place.global_rank(k) == (p * data + k) * tensor + t);
        }
    CHECK(counted == ranks);
  }
}

namespace {

// The smallest largest-stage size of any split of `params` into `stages` contiguous non-empty runs,
// by dynamic programming over every split (independent of the binary search the engine uses).
std::int64_t best_largest_stage(const std::vector<std::int64_t>& params, int stages) {
  const int n = static_cast<int>(params.size());
  constexpr auto kNone = std::numeric_limits<std::int64_t>::max();
  // best[k][i]: the first i layers in k stages.
  std::vector<std::vector<std::int64_t>> best(stages + 1, std::vector<std::int64_t>(n + 1, kNone));
  best[0][0] = 0;
  for (int k = 1; k <= stages; ++k)
    for (int i = k; i <= n; ++i) {
      std::int64_t last = 0;
      for (int j = i - 1; j >= k - 1; --j) {
        last += params[static_cast<std::size_t>(j)];
        if (best[k - 1][j] != kNone) best[k][i] = std::min(best[k][i], std::max(best[k - 1][j], last));
      }
    }
  return best[stages][n];
}

}  // namespace

TEST_CASE("pipeline stages are contiguous runs of the layer table with the smallest largest stage",
          "[parallel][pipeline]") {
  std::mt19937_64 rng(11);
  for (int trial = 0; trial < 300; ++trial) {
    const int layers = 1 + static_cast<int>(rng() % 12);
    std::vector<LayerSpec> table;
    std::vector<std::int64_t> params;
    for (int i = 0; i < layers; ++i) {
      LayerSpec l;
      l.name = fmt::format("l{}", i);
      // Mostly similar layers, now and then a huge one (an embedding).
      l.params = rng() % 5 == 0 ? 1 + static_cast<std::int64_t>(rng() % 100000) : 1 + static_cast<std::int64_t>(rng() % 1000);
      l.rows = l.params;
      table.push_back(l);
      params.push_back(l.params);
    }
    const int stages = 1 + static_cast<int>(rng() % static_cast<unsigned>(layers));
    INFO("trial " << trial << ": " << layers << " layers, " << stages << " stages");
    const std::vector<PipelineStage> split = pipeline_stages(table, stages);
    REQUIRE(split.size() == static_cast<std::size_t>(stages));
    int next = 0;
    std::int64_t largest = 0;
    for (const PipelineStage& s : split) {
      CHECK(s.first_layer == next);  // contiguous, in order
      REQUIRE(!s.layers.empty());
      for (const LayerSpec& l : s.layers) CHECK(l.name == fmt::format("l{}", next++));
      largest = std::max(largest, s.params());
    }
    CHECK(next == layers);
    CHECK(largest == best_largest_stage(params, stages));
  }
  // A model known by its size alone is cut into equal stages; a table of fewer layers than stages is
  // refused.
  LayerSpec flat;
  flat.name = "model";
  flat.params = flat.rows = 1001;
  flat.unstructured = true;
  const std::vector<PipelineStage> thirds = pipeline_stages({flat}, 3);
  REQUIRE(thirds.size() == 3);
  CHECK(thirds[0].params() == 334);
  CHECK(thirds[1].params() == 334);
  CHECK(thirds[2].params() == 333);
  LayerSpec one = flat;
  one.unstructured = false;
  CHECK_THROWS_WITH(pipeline_stages({one, one}, 3), Catch::Contains("3 pipeline stages need at least as many layers"));
}

TEST_CASE("every data-parallel group sends the closed-form bytes of its 1/tensor part",
          "[parallel][formula]") {
  // 64 ranks, tensor 8: D = 8 ranks a group, each holding 1/8 of a 64 MB model (8 MB = 2M fp32).
  constexpr double kPart = 64e6 / 8, kD = 8;
  SECTION("ring all-reduce: 2(D-1)/D of the part") {
    const Measured m = measure(rails(8, "name: ring_allreduce", "64MB"));
    REQUIRE(m.bytes.size() == 64);
    for (double b : m.bytes) CHECK(b == Approx(2 * (kD - 1) / kD * kPart).epsilon(1e-12));
  }
  SECTION("fsdp full sharding: 3(D-1)/D of the part") {
    const Measured m = measure(rails(8, "name: fsdp, sharding: full", "64MB"));
    REQUIRE(m.bytes.size() == 64);
    for (double b : m.bytes) CHECK(b == Approx(3 * (kD - 1) / kD * kPart).epsilon(1e-12));
  }
}

TEST_CASE("groups on their own rails take one group's time, groups sharing a NIC do not",
          "[parallel][rails]") {
  const Measured alone = measure(one_group("name: ring_allreduce", "8MB"));
  const Measured rail_per_group = measure(rails(8, "name: ring_allreduce", "64MB"));
  const Measured one_nic = measure(rails(1, "name: ring_allreduce", "64MB"));
  INFO("alone " << alone.step_time << " s, eight rails " << rail_per_group.step_time << " s, one NIC "
                << one_nic.step_time << " s");
  CHECK(rail_per_group.step_time == Approx(alone.step_time).epsilon(0.05));
  // Eight groups through one NIC a node: the bandwidth term is eight times one group's.
  CHECK(one_nic.step_time > 4 * alone.step_time);
  // fsdp's reduce-scatters and gathers contend the same way.
  const Measured fsdp_alone = measure(one_group("name: fsdp", "8MB"));
  const Measured fsdp_rails = measure(rails(8, "name: fsdp", "64MB"));
  CHECK(fsdp_rails.step_time == Approx(fsdp_alone.step_time).epsilon(0.05));
}

namespace {

// `nodes` single-GPU nodes, a flat model of `size`, the layout given.
std::string flat_nodes(int nodes, const std::string& algorithm, const std::string& size,
                       const std::string& parallel) {
  return fmt::format(R"(
seed: 3
ranks: {0}
steps: 2
platform: {{topology: cluster, nodes: {0}, nic_bandwidth: 100Gbps, bandwidth: 100Gbps, latency: 1us}}
network: alpha_beta
compute: {{reduce_speed: 0}}
model: {{size: {1}, math: off}}
algorithm: {{{2}}}
{3}
)",
                     nodes, size, algorithm, parallel);
}

}  // namespace

TEST_CASE("every group of a pipeline stage sends the closed-form bytes of its part of the stage",
          "[parallel][pipeline][formula]") {
  // 32 ranks, tensor 2 x pipeline 2: D = 8 ranks a group, each holding 1/2 of a stage of half of a
  // 64 MB model (16 MB = 4M fp32).
  constexpr double kPart = 64e6 / 4, kD = 8;
  const Measured ring = measure(flat_nodes(32, "name: ring_allreduce", "64MB", "parallel: {tensor: 2, pipeline: 2}"));
  REQUIRE(ring.bytes.size() == 32);
  for (double b : ring.bytes) CHECK(b == Approx(2 * (kD - 1) / kD * kPart).epsilon(1e-12));
  const Measured fsdp = measure(flat_nodes(32, "name: fsdp, sharding: full", "64MB", "parallel: {tensor: 2, pipeline: 2}"));
  REQUIRE(fsdp.bytes.size() == 32);
  for (double b : fsdp.bytes) CHECK(b == Approx(3 * (kD - 1) / kD * kPart).epsilon(1e-12));
}

TEST_CASE("pipeline stages aggregate at once: two stages on their own nodes take one stage's time",
          "[parallel][pipeline]") {
  // Megatron-LM's order puts pipeline stages on consecutive ranks: with one GPU a node, stage 0's
  // group is nodes 0-7 and stage 1's nodes 8-15, which share no link. Stages that aggregated one
  // after the other would take twice as long.
  const Measured one_stage = measure(flat_nodes(8, "name: ring_allreduce", "32MB", ""));
  const Measured two_stages =
      measure(flat_nodes(16, "name: ring_allreduce", "64MB", "parallel: {pipeline: 2}"));
  INFO("one stage alone " << one_stage.step_time << " s, two stages " << two_stages.step_time << " s");
  CHECK(two_stages.step_time == Approx(one_stage.step_time).epsilon(0.05));
}

TEST_CASE("summary.json names the parallel layout and its group count", "[parallel][outputs]") {
  const auto dir = fresh_dir("parallel-summary");
  write_file(dir / "s.yaml", rails(8, "name: ring_allreduce", "8MB"));
  const auto r = run_aggsim({"run", "s.yaml", "--out", "out"}, dir);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto summary = nlohmann::json::parse(read_file(dir / "out" / "summary.json"));
  CHECK(summary.at("parallel").at("tensor") == 8);
  CHECK(summary.at("parallel").at("data") == 8);
  CHECK(summary.at("parallel").at("pipeline") == 1);
  CHECK(summary.at("data_parallel_groups") == 8);
  CHECK(read_file(dir / "out" / "resolved.yaml").find("parallel: {tensor: 8, pipeline: 1}") !=
        std::string::npos);
  // fsdp's per-rank figures are one rank's (the first group's first): the flat model is one unit of
  // 1/8 of 8 MB, sharded over the group's 8 ranks.
  write_file(dir / "f.yaml", rails(8, "name: fsdp", "8MB"));
  const auto f = run_aggsim({"run", "f.yaml", "--out", "fout"}, dir);
  INFO(f.err);
  REQUIRE(f.exit_code == 0);
  const auto fsdp = nlohmann::json::parse(read_file(dir / "fout" / "summary.json"));
  CHECK(fsdp.at("units") == 1);
  CHECK(fsdp.at("param_bytes_per_rank") == Approx(8e6 / 8 / 8));
}

TEST_CASE("collectives.csv names each pipeline stage's first data-parallel group", "[parallel][pipeline][outputs]") {
  const auto dir = fresh_dir("parallel-stages");
  write_file(dir / "s.yaml", flat_nodes(16, "name: ring_allreduce", "8MB", "parallel: {tensor: 2, pipeline: 2}"));
  const auto r = run_aggsim({"run", "s.yaml", "--out", "out"}, dir);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const std::string csv = read_file(dir / "out" / "collectives.csv");
  // Ranks t + 2 (d + 4 p): stage 0's tensor rank 0 is 0,2,4,6; stage 1's is 8,10,12,14.
  CHECK(csv.find("0,0,\"0,2,4,6\",all_reduce") != std::string::npos);
  CHECK(csv.find("0,1,\"8,10,12,14\",all_reduce") != std::string::npos);
  const auto summary = nlohmann::json::parse(read_file(dir / "out" / "summary.json"));
  CHECK(summary.at("parallel").at("pipeline") == 2);
  CHECK(summary.at("data_parallel_groups") == 4);
}

namespace {

// The held-out loss after each evaluation and the largest agg_error of a small MLP training.
struct Training {
  std::vector<double> losses;
  double worst_agg_error = 0;
};

Training train(int ranks, const std::string& parallel, const std::string& algorithm = "name: ring_allreduce") {
  const std::string yaml = fmt::format(R"(
seed: 5
ranks: {}
steps: 12
platform: {{topology: cluster, nodes: {}, bandwidth: 10Gbps, latency: 1us, speed: 10Tf}}
network: alpha_beta
model: {{size: 4MB}}
algorithm: {{{}}}
workload: {{problem: mlp, dim: 16, hidden: 32, classes: 4, batch: 16, lr: 0.05, momentum: 0.9, eval_every: 3}}
{}
)",
                                       ranks, ranks, algorithm, parallel);
  const std::string text = run_isolated([&] {
    const Scenario sc = load_scenario_text(yaml, "test.yaml");
    const SimulationResult r = simulate(sc, {});
    std::string out;
    for (const auto& e : r.evaluations) out += fmt::format("L {:.17g} ", e.loss);
    for (const auto& m : r.math)
      if (m) out += fmt::format("E {:.17g} ", m->agg_error);
    return out;
  });
  auto tagged = by_tag(text);
  Training t;
  t.losses = tagged["L"];
  for (double e : tagged["E"]) t.worst_agg_error = std::max(t.worst_agg_error, e);
  return t;
}

}  // namespace

TEST_CASE("under a parallel layout the math plane trains as data parallelism of degree D",
          "[parallel][math]") {
  // Each model replica (the tensor x pipeline ranks of one data rank) trains on that data rank's
  // samples, each group reduces its slice of the parameter vector over the replicas, and the replica
  // assembles the slices: an exact all-reduce gives the D-rank run's update. The ring's float sums
  // differ only in the order of each element's D terms: with D = 2 (a + b either way) the losses
  // are bit-identical; with D = 4 within float rounding (the bound: 1e-6 of the loss over 12 steps,
  // and each step's relative distance from the exact reduction, agg_error, below 1e-6).
  const Training d2 = train(2, "");
  const Training layout2 = train(16, "parallel: {tensor: 2, pipeline: 4}");
  REQUIRE(d2.losses.size() == 4);
  REQUIRE(layout2.losses.size() == d2.losses.size());
  for (std::size_t i = 0; i < d2.losses.size(); ++i) CHECK(layout2.losses[i] == d2.losses[i]);
  const Training d4 = train(4, "");
  const Training layout4 = train(16, "parallel: {tensor: 2, pipeline: 2}");
  REQUIRE(layout4.losses.size() == d4.losses.size());
  for (std::size_t i = 0; i < d4.losses.size(); ++i) CHECK(layout4.losses[i] == Approx(d4.losses[i]).epsilon(1e-6));
  CHECK(layout4.worst_agg_error < 1e-6);
  // Not the run over all 16 ranks: with more data a step, its losses differ well beyond rounding.
  const Training d16 = train(16, "");
  CHECK(std::abs(d16.losses.back() - layout4.losses.back()) > 1e-4);
}

TEST_CASE("a parallel layout that does not divide the ranks is refused at its key", "[parallel][input]") {
  const std::string base = "ranks: 12\nplatform: {topology: cluster, nodes: 12}\nmodel: {math: off}\n";
  check_refused(base + "parallel: {tensor: 8}\n",
                {"bad.yaml:4:", "parallel.tensor", "does not divide the 12 ranks"});
  check_refused(base + "parallel: {pipeline: 5}\n",
                {"bad.yaml:4:", "parallel.pipeline", "does not divide the 12 ranks"});
  check_refused(base + "parallel: {tensor: 0}\n", {"bad.yaml:4:", "tensor"});
  check_refused(base + "parallel: {tensor: 2, data: 6}\n", {"bad.yaml:4:", "data"});
  // More stages than the layer table has layers.
  check_refused("ranks: 12\nplatform: {topology: cluster, nodes: 12}\nmodel: {layers: four.yaml, math: off}\n"
                "parallel: {pipeline: 6}\n",
                {"bad.yaml:4:", "parallel.pipeline", "6 pipeline stages need a layer each", "has 4"},
                {{"four.yaml", "name: four\nsource: four layers\nlayers:\n  - {name: a, shape: [4, 4], forward_flops: 32}\n  - {name: b, shape: [4, 4], forward_flops: 32}\n"
                               "  - {name: c, shape: [4, 4], forward_flops: 32}\n  - {name: d, shape: [4, 4], forward_flops: 32}\n"}});
  // The math plane: a slice of the proxy vector for every group.
  check_refused("ranks: 12\nplatform: {topology: cluster, nodes: 12}\nmodel: {proxy_dim: 4}\n"
                "parallel: {tensor: 2, pipeline: 3}\nalgorithm: {name: ring_allreduce}\n",
                {"bad.yaml:4:", "parallel", "6 data-parallel groups", "proxy_dim"});
}
