// Replay of repeated steps (sim/engine/replay.hpp) against the full simulation of the same scenario
// (engine: {replay: false}): every figure that is not a time is byte-identical (bytes, messages,
// loss, accuracy, agg_error, compress_error, ...), times agree within the documented bound (README,
// "Replay of repeated steps"), and a run replay refuses is byte-identical in every file.
#include <Eigen/Core>
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "sim/metrics/math_log.hpp"
#include "support/cli.hpp"
#include "support/csv.hpp"
#include "support/same_outputs.hpp"

using namespace aggsim::test;
namespace fs = std::filesystem;

namespace {

// Two nodes of four GPUs training an MLP with ResNet-50's layer table for timing: the compute
// between aggregations is longer than the ranks' skew, so a step starts on an idle network.
// With math off there is no workload and no proxy vector: the timing plane alone.
std::string scenario(const std::string& extra, int steps = 10, bool math = true) {
  return "name: replay\nseed: 5\nranks: 8\nsteps: " + std::to_string(steps) +
         "\n"
         "platform: {topology: cluster, nodes: 2, gpus_per_node: 4, bandwidth: 25Gbps, latency: 2us, "
         "speed: 100Tf}\nnetwork: lv08\n"
         "model: {layers: " AGGSIM_SOURCE_DIR "/scenarios/models/resnet50.yaml, batch: 16" +
         std::string(math
                         ? "}\nworkload: {problem: mlp, dim: 16, hidden: 24, classes: 4, batch: 8, lr: 0.05, "
                           "eval_every: 3}\n"
                         : ", math: off}\n") +
         extra;
}

const std::vector<std::string> kFsdpShardings = {"full", "grad_op", "optimizer", "hybrid"};

fs::path run(const fs::path& dir, const std::string& name, const std::string& yaml) {
  return run_named(dir, name, yaml);
}

// The README's bound: times within 1e-9 of the simulated time, bandwidths within 1e-9 relative.
void check_steps(const fs::path& full, const fs::path& replayed, double sim_time) {
  check_same_steps(full, replayed, sim_time);
  check_same_collectives(full, replayed, sim_time);  // replayed steps have their calls' rows too
}

void check_summary(const nlohmann::json& full, const nlohmann::json& replayed) {
  check_same_summary(full, replayed, {"steps_replayed", "replay_refused"});
}

// Runs `yaml` in full and with replay: no refusal, and the replayed run's figures within the
// README's bound of the full simulation's. Returns the steps replayed.
int replayed_as_full(const std::string& name, const std::string& yaml) {
  const auto dir = fresh_dir(name);
  const auto full = run(dir, "full", yaml + "engine: {replay: false}\n");
  const auto replayed = run(dir, "replayed", yaml);
  const auto a = nlohmann::json::parse(read_file(full / "summary.json"));
  const auto b = nlohmann::json::parse(read_file(replayed / "summary.json"));
  CHECK(b["replay_refused"].is_null());
  check_summary(a, b);
  check_steps(full, replayed, a["sim_time_s"].get<double>());
  return b["steps_replayed"].get<int>();
}

}  // namespace

TEST_CASE("Replayed steps give a full simulation's figures across algorithms, compressors and workloads",
          "[replay]") {
  struct Case {
    const char* what;
    std::string yaml;
    int min_replayed = 5;  // two equal steps are simulated, then each step not yet begun is replayed
  };
  const std::vector<Case> cases = {
      {"ring, DDP buckets", "algorithm: {name: ring_allreduce, granularity: layer, bucket: 25MB}\n"},
      {"halving-doubling",
       "algorithm: {name: halving_doubling_allreduce, granularity: layer, bucket: 25MB}\n"},
      {"recursive doubling",
       "algorithm: {name: recursive_doubling_allreduce, granularity: layer, bucket: 25MB}\n"},
      {"tree", "algorithm: {name: tree_allreduce, granularity: layer, bucket: 25MB}\n"},
      {"double binary tree",
       "algorithm: {name: double_binary_tree_allreduce, granularity: layer, bucket: 25MB}\n"},
      {"hierarchical", "algorithm: {name: hierarchical_allreduce, granularity: layer, bucket: 25MB}\n"},
      {"2-D torus", "algorithm: {name: torus2d_allreduce, rows: 2, granularity: layer, bucket: 25MB}\n"},
      {"parameter server (wait_any order)",
       "algorithm: {name: parameter_server, servers: 2, granularity: layer, bucket: 25MB}\n"},
      {"dedicated parameter server, broadcast pull",
       "algorithm: {name: parameter_server, servers: 1, placement: dedicated, pull: broadcast, granularity: "
       "layer, bucket: 25MB}\n"},
      {"local SGD, every 2",
       "algorithm: {name: ring_allreduce, granularity: layer, bucket: 25MB, every: 2}\n", 3},
      {"weights averaged",
       "algorithm: {name: ring_allreduce, granularity: layer, bucket: 25MB, apply_to: weights}\n"},
      {"top-k with error feedback on all-gather",
       "algorithm: {name: allgather, granularity: layer, bucket: 25MB}\n"
       "compression: {name: topk, ratio: 0.05, error_feedback: true}\n"},
      {"random-k, shared seed",
       "algorithm: {name: ring_allreduce, granularity: layer, bucket: 25MB}\n"
       "compression: {name: randomk, ratio: 0.1, shared_seed: true}\n"},
      {"QSGD on a parameter server",
       "algorithm: {name: parameter_server, granularity: layer, bucket: 25MB}\n"
       "compression: {name: qsgd}\n"},
      {"PowerSGD on a ring",
       "algorithm: {name: ring_allreduce, granularity: layer, bucket: 25MB}\n"
       "compression: {name: powersgd, rank: 2}\n"},
      {"NCCL's model, algorithm and protocol chosen per call (its flow model on every call)",
       "algorithm: {name: nccl_allreduce, granularity: layer, bucket: 25MB, few_pieces: flow}\n"},
      {"sign with error feedback",
       "algorithm: {name: parameter_server, granularity: layer, bucket: 25MB}\n"
       "compression: {name: sign, error_feedback: true}\n"},
  };
  for (const Case& c : cases) {
    SECTION(c.what) {
      const auto dir = fresh_dir("replay");
      const auto full = run(dir, "full", scenario(c.yaml + "engine: {replay: false}\n"));
      const auto replayed = run(dir, "replayed", scenario(c.yaml));
      const auto a = nlohmann::json::parse(read_file(full / "summary.json"));
      const auto b = nlohmann::json::parse(read_file(replayed / "summary.json"));
      CHECK(a["steps_replayed"] == 0);
      CHECK(a["replay_refused"] == "engine.replay: false");
      CHECK(b["replay_refused"].is_null());
      CHECK(b["steps_replayed"].get<int>() >= c.min_replayed);
      check_summary(a, b);
      check_steps(full, replayed, a["sim_time_s"].get<double>());
    }
  }
}

TEST_CASE("Replayed sharded steps (fsdp) give a full simulation's figures over generated cases",
          "[replay][fsdp]") {
  // Drawn from a fixed seed: sharding, prefetch, unit size, wire precision, message-level ring or
  // NCCL's collectives, the math plane, a compressor riding the ring's reduce-scatters, and the
  // platform (two or four nodes of four GPUs).
  std::mt19937 draw(49);
  const auto pick = [&draw](const std::vector<std::string>& of) {
    return of[std::uniform_int_distribution<std::size_t>(0, of.size() - 1)(draw)];
  };
  std::set<std::string> seen;  // every sharding and both collectives are drawn
  int ring_replayed = 0;        // ring cases whose steps started on an idle network
  for (int i = 0; i < 12; ++i) {
    // The first eight cover every sharding with both collectives; the rest are drawn.
    const std::string sharding = i < 8 ? kFsdpShardings[static_cast<std::size_t>(i % 4)] : pick(kFsdpShardings);
    const std::string collectives = i < 8 ? (i < 4 ? "ring" : "nccl") : pick({"ring", "nccl"});
    const bool math = pick({"on", "off"}) == "on";
    std::string alg = "algorithm: {name: fsdp, sharding: " + sharding + ", collectives: " + collectives +
                      ", prefetch: " + pick({"true", "false"}) + ", unit: " + pick({"0", "4MB", "25MB"}) +
                      ", param_dtype: " + pick({"fp32", "bf16"}) + ", reduce_dtype: " + pick({"fp32", "fp16"}) +
                      "}\n";
    if (collectives == "ring" && math && pick({"dense", "randomk"}) == "randomk")
      alg += "compression: {name: randomk, ratio: 0.5, shared_seed: true}\n";
    std::string yaml = scenario(alg, 9, math);
    const bool four_nodes = pick({"2", "4"}) == "4";
    if (four_nodes) {
      const auto at = yaml.find("ranks: 8");
      yaml.replace(at, 8, "ranks: 16");
      yaml.replace(yaml.find("nodes: 2"), 8, "nodes: 4");
    }
    seen.insert(sharding + "/" + collectives);
    {
      INFO(std::to_string(i) + ": " + alg + (four_nodes ? "16 ranks" : "8 ranks") + (math ? ", math" : ""));
      // At most three steps simulated before replay starts, and the last one (its closing gather).
      // NCCL's calls begin when every rank has called, so steps start on an idle network; over the
      // message-level ring a rank may start the next step's gathers while a far rank's last
      // reduce-scatter still runs, and such runs are simulated in full.
      const int steps_replayed = replayed_as_full("replay-fsdp", yaml);
      if (collectives == "nccl") CHECK(steps_replayed >= 4);
      if (collectives == "ring" && steps_replayed >= 4) ++ring_replayed;
    }
  }
  CHECK(seen.size() == 8);
  CHECK(ring_replayed >= 2);
}

TEST_CASE("Replayed steps of a parallel layout's groups give a full simulation's figures",
          "[replay][parallel]") {
  // Four nodes of four GPUs as tensor 2 x pipeline 2 x data 4: four groups aggregate at once, each
  // over the in-process network by global ranks while replayed.
  struct Case {
    const char* what;
    std::string alg;
    bool math;
  };
  const std::vector<Case> cases = {
      {"ring, math on", "algorithm: {name: ring_allreduce, granularity: layer, bucket: 25MB}\n", true},
      {"NCCL's model", "algorithm: {name: nccl_allreduce, granularity: layer, bucket: 25MB, few_pieces: flow}\n",
       false},
      {"fsdp over NCCL", "algorithm: {name: fsdp, sharding: full, collectives: nccl, unit: 4MB}\n", false},
      {"fsdp hybrid, ring", "algorithm: {name: fsdp, sharding: hybrid, shard_group: 2}\n", false},
  };
  for (const Case& c : cases) {
    SECTION(c.what) {
      std::string yaml = scenario(c.alg + "parallel: {tensor: 2, pipeline: 2}\n", 9, c.math);
      yaml.replace(yaml.find("ranks: 8"), 8, "ranks: 16");
      yaml.replace(yaml.find("nodes: 2"), 8, "nodes: 4");
      CHECK(replayed_as_full("replay-layout", yaml) >= 4);
    }
  }
}

TEST_CASE("A replayed run is byte-identical to itself, collectives.csv included", "[replay]") {
  const auto dir = fresh_dir("replay-again");
  const std::string alg = "algorithm: {name: ring_allreduce, granularity: layer, bucket: 25MB}\n";
  const auto a = run(dir, "a", scenario(alg, 8, false));
  const auto b = run(dir, "b", scenario(alg, 8, false));
  CHECK(nlohmann::json::parse(read_file(a / "summary.json"))["steps_replayed"].get<int>() >= 4);
  for (const char* file : {"summary.json", "steps.csv", "collectives.csv"}) {
    INFO(file);
    CHECK(read_file(a / file) == read_file(b / file));
  }
  // Every call of every step has its transfer window, replayed steps' too.
  const auto calls = parse_csv(read_file(a / "collectives.csv"));
  REQUIRE(calls.size() > 8);
  for (std::size_t i = 1; i < calls.size(); ++i) CHECK(!calls[i][11].empty());
}

TEST_CASE("Replay with math off (no payload data) gives a full simulation's figures", "[replay]") {
  const auto dir = fresh_dir("replay-math-off");
  const std::string alg = "algorithm: {name: hierarchical_allreduce, granularity: layer, bucket: 25MB}\n";
  const auto replayed = run(dir, "replayed", scenario(alg, 10, false));
  const auto full = run(dir, "full", scenario(alg + "engine: {replay: false}\n", 10, false));
  const auto a = nlohmann::json::parse(read_file(full / "summary.json"));
  const auto b = nlohmann::json::parse(read_file(replayed / "summary.json"));
  CHECK(b["steps_replayed"].get<int>() >= 5);
  check_summary(a, b);
  check_steps(full, replayed, a["sim_time_s"].get<double>());
}

TEST_CASE("Steps that differ by the rounding of the absolute clock only are replayed", "[replay]") {
  // 64 ranks on 8 nodes: the full simulation's steps 1, 2 and 3 last 392, 460 and 12 ulps of the
  // clock longer or shorter than the step before (below 1e-13 of the clock): one simulated step more
  // than needed when equality allowed 64 ulps of the clock in all (3 steps replayed of 8, not 4).
  const auto dir = fresh_dir("replay-rounding");
  const std::string yaml =
      "name: rounding\nranks: 64\nsteps: 8\n"
      "platform: {topology: cluster, nodes: 8, gpus_per_node: 8, bandwidth: 100Gbps, latency: 2us, speed: "
      "100Tf}\nnetwork: lv08\n"
      "model: {layers: " AGGSIM_SOURCE_DIR
      "/scenarios/models/resnet50.yaml, batch: 32}\n"
      "algorithm: {name: ring_allreduce, granularity: layer, bucket: 25MB}\n";
  const auto full = run(dir, "full", yaml + "engine: {replay: false}\n");
  const auto replayed = run(dir, "replayed", yaml);
  const auto a = nlohmann::json::parse(read_file(full / "summary.json"));
  const auto b = nlohmann::json::parse(read_file(replayed / "summary.json"));
  // Rounding only: each step (rows 2..8 are steps 1..7) within 1e-12 of the clock of the one before.
  const auto steps = parse_csv(read_file(full / "steps.csv"));
  REQUIRE(steps[0][1] == "step_time_s");
  REQUIRE(steps[0][4] == "end_time_s");
  for (std::size_t row = 2; row < steps.size(); ++row)
    CHECK(std::abs(std::stod(steps[row][1]) - std::stod(steps[row - 1][1])) <=
          1e-12 * std::stod(steps[row][4]));
  CHECK(b["steps_replayed"].get<int>() >= 4);
  check_summary(a, b);
  check_steps(full, replayed, a["sim_time_s"].get<double>());
}

TEST_CASE("Runs replay cannot repeat are simulated in full and byte-identical", "[replay]") {
  struct Case {
    const char* what;
    std::string yaml;
    std::string refusal;  // "": refused only because no two steps start alike
  };
  const std::string ring = "algorithm: {name: ring_allreduce, granularity: layer, bucket: 25MB}\n";
  const std::vector<Case> cases = {
      {"a trace", ring + "output: {trace: true}\n", "output.trace: the trace records every transfer"},
      {"stragglers", ring + "compute: {straggler: {distribution: lognormal, sigma: 0.1}}\n",
       "compute.straggler: compute times change from step to step"},
      {"threshold sizes",
       "algorithm: {name: allgather, granularity: layer, bucket: 25MB}\ncompression: {name: "
       "threshold, threshold: 0.01}\n",
       "threshold: encoded sizes depend on the data"},
      {"ATOMO's drawn atoms",
       "algorithm: {name: parameter_server, granularity: layer, bucket: 25MB}\n"
       "compression: {name: atomo}\n",
       "atomo: encoded sizes depend on the data"},
      {"asynchronous parameter server",
       "algorithm: {name: parameter_server, servers: 1, placement: dedicated, asynchronous: true}\n",
       "parameter_server: asynchronous: pushes and pulls follow simulated arrival times"},
      {"backup workers",
       "algorithm: {name: parameter_server, aggregate: 6, granularity: layer, bucket: 25MB}\n",
       "parameter_server: aggregate below the worker count: late pushes are received in a later step"},
      {"gossipgrad", "algorithm: {name: gossipgrad, granularity: layer, bucket: 25MB}\n",
       "gossipgrad: a rank waits for its partners only, so ranks drift apart by whole steps"},
      {"neighbour averaging", "algorithm: {name: neighbor_averaging, granularity: layer, bucket: 25MB}\n",
       "neighbor_averaging: a rank waits for its neighbours only, so ranks drift apart by whole steps"},
      {"an MSCCL program (the shipped ring)",
       "algorithm: {name: msccl, program: ring_allreduce_8, granularity: layer, bucket: 25MB}\n",
       "msccl: threadblocks interleave their transfers by timing"},
  };
  for (const Case& c : cases) {
    SECTION(c.what) {
      const auto dir = fresh_dir("replay-refused");
      const auto full = run(dir, "full", scenario(c.yaml + "engine: {replay: false}\n", 8));
      const auto again = run(dir, "again", scenario(c.yaml, 8));
      auto a = nlohmann::json::parse(read_file(full / "summary.json"));
      auto b = nlohmann::json::parse(read_file(again / "summary.json"));
      CHECK(b["steps_replayed"] == 0);
      CHECK(b["replay_refused"] == c.refusal);
      a.erase("replay_refused");
      b.erase("replay_refused");
      CHECK(a == b);
      for (const char* file : {"steps.csv", "collectives.csv", "trace.json", "links.csv"}) {
        INFO(file);
        CHECK(fs::exists(full / file) == fs::exists(again / file));
        if (fs::exists(full / file)) CHECK(read_file(full / file) == read_file(again / file));
      }
    }
  }
  // Runs `yaml` without replay and with it: no step replayed, nothing refused, the same steps (and
  // `also`, another output). Returns the folder of the run with replay.
  auto simulated_in_full = [](const std::string& name, const std::string& yaml, const char* also) {
    const auto dir = fresh_dir(name);
    const auto full = run(dir, "full", yaml + "engine: {replay: false}\n");
    const auto again = run(dir, "again", yaml);
    const auto b = nlohmann::json::parse(read_file(again / "summary.json"));
    CHECK(b["steps_replayed"] == 0);
    CHECK(b["replay_refused"].is_null());
    for (const char* file : {"steps.csv", also}) CHECK(read_file(full / file) == read_file(again / file));
    return again;
  };
  SECTION("steps whose NCCL calls move piece by piece at flow level are all simulated") {
    // Trees of 23 pieces a channel (few_pieces: chunk, the default): every step's pieces interleave
    // by timing, so no step is replayed, and the run is the one without replay.
    const auto again = simulated_in_full(
        "replay-pieces", scenario("algorithm: {name: nccl_allreduce, granularity: layer, bucket: 25MB}\n", 8),
        "collectives.csv");
    CHECK(read_file(again / "collectives.csv").find(",tree,") != std::string::npos);
  }
  SECTION("steps that overlap are all simulated") {
    // No compute between aggregations, and ranks on the faster intra-node links end first and start
    // the next step's transfers while the inter-node ones still run.
    simulated_in_full("replay-overlap",
                      "name: overlap\nranks: 8\nsteps: 6\nplatform: {topology: cluster, nodes: 2, gpus_per_node: "
                      "4}\nmodel: {size: 8MB}\nalgorithm: {name: ring_allreduce}\n",
                      "steps.csv");
  }
}

TEST_CASE("engine.replay is checked where it is written", "[replay][input]") {
  const auto dir = fresh_dir("replay-input");
  const std::string base =
      "name: bad\nranks: 4\nsteps: 2\nplatform: {topology: cluster, hosts: 4}\nalgorithm: {name: "
      "ring_allreduce}\n";
  for (const auto& [yaml, expected] : std::vector<std::pair<std::string, std::string>>{
           {base + "engine: {replay: maybe}\n", "bad.yaml:6:18: engine.replay"},
           {base + "engine: {replays: false}\n", "bad.yaml:6:10: engine.replays"},
           {base + "engine: [replay]\n", "bad.yaml:6:9: engine"}}) {
    write_file(dir / "bad.yaml", yaml);
    for (const std::vector<std::string>& args :
         {std::vector<std::string>{"run", "bad.yaml", "--out", "never"},
          std::vector<std::string>{"validate", "bad.yaml"}}) {
      const auto r = run_aggsim(args, dir);
      INFO(yaml << r.err);
      CHECK(r.exit_code == 2);
      CHECK(r.err.find(expected) != std::string::npos);
      CHECK_FALSE(fs::exists(dir / "never"));
    }
  }
  // Kept in resolved.yaml only when it is not the default, so a rerun of it replays the same way.
  write_file(dir / "off.yaml", base + "engine: {replay: false}\n");
  REQUIRE(run_aggsim({"run", "off.yaml", "--out", "off", "-q"}, dir).exit_code == 0);
  CHECK(read_file(dir / "off" / "resolved.yaml").find("engine:\n  replay: false") != std::string::npos);
}

TEST_CASE("The math log's figures do not depend on the order ranks report in", "[replay][math]") {
  // A replayed step's ranks finish in another order than a simulated one's; sums over ranks are
  // folded in rank order, so the figures are the same bits.
  const int ranks = 5;
  std::vector<Eigen::VectorXf> in, out;
  for (int r = 0; r < ranks; ++r) {
    in.push_back(
        Eigen::VectorXf::LinSpaced(7, 0.1f * static_cast<float>(r + 1), 3.3f / static_cast<float>(r + 1)));
    out.push_back(in.back() * 0.7f + Eigen::VectorXf::Constant(7, 1e-3f * static_cast<float>(r)));
  }
  const auto figures = [&](const std::vector<int>& order) {
    aggsim::ExactReduction avg;
    avg.divisor = ranks;
    aggsim::MathLog log(1, avg, std::vector<bool>(ranks, true));
    for (int r : order) {
      aggsim::CompressionTally t;
      t.add(1.0 / (r + 3), 1.0 + r);
      log.report_input(r, 0, in[static_cast<std::size_t>(r)]);
      log.report_result(r, 0, out[static_cast<std::size_t>(r)], t);
    }
    return log.steps().at(0).value();
  };
  const auto a = figures({0, 1, 2, 3, 4});
  const auto b = figures({4, 2, 0, 3, 1});
  CHECK(a.agg_error == b.agg_error);
  CHECK(a.agg_signed_error == b.agg_signed_error);
  CHECK(a.compress_error == b.compress_error);
  CHECK(a.rank_spread == b.rank_spread);
}
