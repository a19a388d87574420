// hierarchical_allreduce's `node_flows: merged` (sim/engine/merged_flows.hpp) against the same
// scenario with separate flows, the slow path it stands for: every time within 1e-9 of the
// simulated time, plus, where chunks split unevenly, the lv08 preset's completion precision for each
// inter-node ring step (sim/engine/README.md, "Merged node flows"; most cases are equal to the last bit),
// every other figure byte-identical (bytes and messages count each rank's share as its own), and the default
// (auto) identical to merged where it is allowed. Where the conditions fail, merged is refused naming the key
// and the reason, and auto runs the separate flows.
#include <catch2/catch.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "support/cli.hpp"
#include "support/csv.hpp"
#include "support/same_outputs.hpp"

using namespace aggsim::test;
namespace fs = std::filesystem;

namespace {

std::string scenario(const std::string& body, const std::string& node_flows) {
  return "name: merged\nseed: 11\n" + body +
         "algorithm: {name: hierarchical_allreduce, node_flows: " + node_flows + "}\n";
}

}  // namespace

TEST_CASE("Merged node flows take the time of separate ones and leave every vector unchanged",
          "[merged_flows]") {
  struct Case {
    const char* what;
    std::string body;
    bool buckets = false;  // DDP buckets by layer (several aggregations a step)
    // Seconds the times may differ by beyond 1e-9 of the simulated time: with unevenly split chunks,
    // the lv08 preset's completion precision (8 B x g / the slowest link) for each of the 2 (N - 1)
    // inter-node ring steps of each aggregation (sim/engine/README.md, "Merged node flows").
    double extra = 0;
  };
  const std::vector<Case> cases = {
      {"4 x 8 GPUs, 100 MiB, LV08, reductions charged",
       "ranks: 32\nsteps: 3\nplatform: {topology: cluster, nodes: 4, gpus_per_node: 8, bandwidth: 100Gbps, "
       "latency: 1us}\nnetwork: lv08\nmodel: {size: 100MiB}\n"},
      {"5 x 4 GPUs, 10^8 B (uneven chunks), LV08",
       "ranks: 20\nsteps: 2\nplatform: {topology: cluster, nodes: 5, gpus_per_node: 4, bandwidth: 25Gbps, "
       "latency: 2us}\nnetwork: lv08\nmodel: {size: 100MB}\n"},
      {"3 x 2 GPUs, an odd size, alpha_beta, reductions free",
       "ranks: 6\nsteps: 2\nplatform: {topology: cluster, nodes: 3, gpus_per_node: 2}\nnetwork: alpha_beta\n"
       "model: {size: 1000003B}\ncompute: {reduce_speed: 0}\n"},
      {"fat tree of 8 x 2 GPUs",
       "ranks: 16\nsteps: 2\nplatform: {topology: fat_tree, nodes: 8, levels: 3, gpus_per_node: 2}\n"
       "network: lv08\nmodel: {size: 10MB}\n"},
      {"the shipped DGX file (4 x 8 GPUs)", "ranks: 32\nsteps: 2\nplatform: {file: " AGGSIM_SOURCE_DIR
                                            "/platforms/dgx_4x8.xml}\nnetwork: lv08\nmodel: {size: 64MB}\n"},
      {"ResNet-50 buckets, MLP workload, replayed steps",
       "ranks: 16\nsteps: 8\nplatform: {topology: cluster, nodes: 4, gpus_per_node: 4, bandwidth: 100Gbps, "
       "latency: 2us, speed: 100Tf}\nnetwork: lv08\nmodel: {layers: " AGGSIM_SOURCE_DIR
       "/scenarios/models/resnet50.yaml, batch: 32}\nworkload: {problem: mlp, dim: 16, hidden: 24, classes: "
       "4, "
       "batch: 8, lr: 0.05, eval_every: 2}\n",
       true},
      {"torus of 16 x 4 GPUs, an uneven size",
       "ranks: 64\nsteps: 2\nplatform: {topology: torus, nodes: 16, gpus_per_node: 4, bandwidth: 50Gbps}\n"
       "network: lv08\nmodel: {size: 30000007B}\n"},
      // Without the lv08 preset's completion precision the uneven flows' ends stay apart (by 1.9e-8
      // s in 0.0094 s here): the same bound per inter-node ring step.
      {"torus of 16 x 4 GPUs, an uneven size, network auto (infiniband: latency + size / bandwidth)",
       "ranks: 64\nsteps: 2\nplatform: {topology: torus, nodes: 16, gpus_per_node: 4, bandwidth: 50Gbps}\n"
       "network: auto\nmodel: {size: 30000007B}\n",
       false, 2 * (2 * 15) * (8.0 * 4 / 6.25e9)},
      // Here the times differ: by 1.1e-9 s in the first step (0.0132 s).
      {"dragonfly of 18 x 4 GPUs, an uneven size",
       "ranks: 72\nsteps: 2\nplatform: {topology: dragonfly, nodes: 18, gpus_per_node: 4, bandwidth: "
       "50Gbps}\n"
       "network: lv08\nmodel: {size: 30000007B}\n",
       false, 2 * (2 * 17) * (8.0 * 4 / 6.25e9)},
  };
  for (const Case& c : cases) {
    SECTION(c.what) {
      const auto dir = fresh_dir("merged-flows");
      const std::string extra = c.buckets ? ", granularity: layer, bucket: 25MB" : "";
      const auto yaml = [&](const std::string& nf) { return scenario(c.body, nf + extra); };
      const auto separate = run_named(dir, "separate", yaml("separate"));
      const auto merged = run_named(dir, "merged", yaml("merged"));
      const auto sa = nlohmann::json::parse(read_file(separate / "summary.json"));
      const auto sb = nlohmann::json::parse(read_file(merged / "summary.json"));
      check_same_steps(separate, merged, sa["sim_time_s"].get<double>(), c.extra);
      check_same_collectives(separate, merged, sa["sim_time_s"].get<double>(), c.extra);
      check_same_summary(sa, sb, {"node_flows_merged"}, c.extra);
      CHECK(sa["node_flows_merged"] == 0.0);
      CHECK(sb["node_flows_merged"] == 1.0);
      if (c.buckets) CHECK(sb["steps_replayed"].get<int>() > 0);
      // The default merges wherever merged is allowed: the same files to the byte.
      const auto by_default = run_named(dir, "auto", yaml("auto"));
      CHECK(read_file(by_default / "steps.csv") == read_file(merged / "steps.csv"));
      CHECK(read_file(by_default / "summary.json") == read_file(merged / "summary.json"));
      CHECK(read_file(by_default / "collectives.csv") == read_file(merged / "collectives.csv"));
    }
  }
}

TEST_CASE("Merged node flows are refused where one flow would not take the time of several",
          "[merged_flows][errors]") {
  struct Case {
    const char* what;
    std::string body;
    std::string reason;  // part of the error
    std::vector<std::string> flags = {};
  };
  const std::string cluster = "ranks: 8\nsteps: 1\nmodel: {size: 1MB}\n";
  const std::vector<Case> cases = {
      {"a GPU link narrower than the NIC",
       cluster + "platform: {topology: cluster, nodes: 2, gpus_per_node: 4, bandwidth: 100Gbps, overrides: "
                 "[{hosts: node-1-gpu-2, intra_bandwidth: 1Gbps}]}\n",
       "differ in bandwidth"},
      {"every GPU link narrower than the NIC",
       cluster + "platform: {topology: cluster, nodes: 2, gpus_per_node: 4, bandwidth: 100Gbps, "
                 "intra_bandwidth: 1Gbps}\n",
       "narrower than the link the routes share"},
      {"the TCP window caps one flow (1 ms latency)",
       cluster +
           "platform: {topology: cluster, nodes: 2, gpus_per_node: 4, bandwidth: 100Gbps, latency: 1ms}\n"
           "network: lv08\n",
       "TCP window bound"},
      {"a GPU of another speed, reductions charged",
       cluster +
           "platform: {topology: cluster, nodes: 2, gpus_per_node: 4, overrides: [{hosts: node-0-gpu-1, "
           "speed: 1Tf}]}\n",
       "reduce at different speeds"},
      {"a trace, which shows each rank's transfers",
       cluster + "platform: {topology: cluster, nodes: 2, gpus_per_node: 4}\noutput: {trace: true}\n",
       "output.trace"},
      {"a SimGrid network flag",
       cluster + "platform: {topology: cluster, nodes: 2, gpus_per_node: 4}\n",
       "--cfg=network/TCP-gamma:1",
       {"--cfg=network/TCP-gamma:1"}},
  };
  for (const Case& c : cases) {
    SECTION(c.what) {
      const auto dir = fresh_dir("merged-refused");
      write_file(dir / "s.yaml", scenario(c.body, "merged"));
      std::vector<std::string> args = {"run", "s.yaml", "--out", "out", "-q"};
      args.insert(args.end(), c.flags.begin(), c.flags.end());
      const auto r = run_aggsim(args, dir);
      INFO(r.err);
      CHECK(r.exit_code == 2);
      CHECK(r.err.find("s.yaml:") != std::string::npos);
      CHECK(r.err.find("algorithm.node_flows") != std::string::npos);
      CHECK(r.err.find(c.reason) != std::string::npos);
      CHECK_FALSE(fs::exists(dir / "out"));
      // The default falls back to separate flows: the same files as asking for them.
      for (const std::string mode : {"separate", "auto"}) {
        write_file(dir / (mode + ".yaml"), scenario(c.body, mode));
        std::vector<std::string> ok = {"run", mode + ".yaml", "--out", mode, "-q"};
        ok.insert(ok.end(), c.flags.begin(), c.flags.end());
        REQUIRE(run_aggsim(ok, dir).exit_code == 0);
      }
      CHECK(read_file(dir / "auto" / "steps.csv") == read_file(dir / "separate" / "steps.csv"));
      const auto summary = nlohmann::json::parse(read_file(dir / "auto" / "summary.json"));
      CHECK(summary["node_flows_merged"] == 0.0);
    }
  }
  SECTION("an inter algorithm other than ring") {
    const auto dir = fresh_dir("merged-refused");
    write_file(dir / "s.yaml",
               "name: m\nranks: 8\nsteps: 1\nplatform: {topology: cluster, nodes: 2, gpus_per_node: 4}\n"
               "algorithm: {name: hierarchical_allreduce, inter: tree, node_flows: merged}\n");
    const auto r = run_aggsim({"validate", "s.yaml"}, dir);
    INFO(r.err);
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("algorithm.node_flows") != std::string::npos);
    CHECK(r.err.find("inter is tree, not ring") != std::string::npos);
  }
}
