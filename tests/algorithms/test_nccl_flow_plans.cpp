// nccl_allreduce's `flow_plans: reuse` (calls of one size share the first one's streams and times)
// against `per_call` (each call works them out again, the reference): every output byte for byte,
// over generated cases across platforms, networks, algorithms, protocols, channel counts,
// collectives and bucket sizes, with several calls of each size (DDP buckets over steps), simulated
// and replayed.
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "support/cli.hpp"

using namespace aggsim;
using namespace aggsim::test;

namespace {

struct PlanCase {
  std::string platform;
  int ranks;
  std::string network;
  std::string keys;  // the algorithm's keys beside its name
  std::string model;
  bool replay;
};

std::string case_yaml(const PlanCase& c, const std::string& flow_plans) {
  return fmt::format(
      "name: flow_plans\nseed: 1\nranks: {}\nsteps: 4\nplatform: {}\nnetwork: {}\nmodel: {}\n"
      "algorithm: {{name: nccl_allreduce, flow_plans: {}{}}}\nengine: {{replay: {}}}\n",
      c.ranks, c.platform, c.network, c.model, flow_plans, c.keys, c.replay ? "true" : "false");
}

// Every output file but resolved.yaml (which names the key's value), or "" when aggsim refuses the
// case (a combination NCCL cannot run there).
std::string outputs(const PlanCase& c, const std::string& flow_plans) {
  const auto dir = fresh_dir("nccl-flow-plans");
  write_file(dir / "s.yaml", case_yaml(c, flow_plans));
  const auto r = run_aggsim({"run", "s.yaml", "--out", "out", "-q"}, dir);
  std::string all;
  if (r.exit_code == 0)
    for (const char* f : {"collectives.csv", "steps.csv", "summary.json"})
      all += fmt::format("== {}\n{}", f, read_file(dir / "out" / f));
  std::filesystem::remove_all(dir);
  return all;
}

std::vector<PlanCase> generated_cases() {
  const std::vector<std::pair<std::string, int>> platforms = {
      {"{system: dgx_h100, nodes: 3}", 24},
      {"{topology: fat_tree, nodes: 6, gpus_per_node: 4, intra_bandwidth: 150GBps, nics_per_node: 2, "
       "nic_bandwidth: 200Gbps, bandwidth: 100Gbps, latency: 1us}",
       24},
      {"{system: mi300x, nodes: 2}", 16},
      {"{topology: torus, nodes: 8, gpus_per_node: 2, bandwidth: 50Gbps, latency: 1us}", 16},
  };
  const std::vector<std::string> networks = {"auto", "lv08", "alpha_beta"};
  const std::vector<std::string> algorithms = {"auto", "ring", "tree", "nvls", "nvls_tree"};
  const std::vector<std::string> protocols = {"auto", "ll", "ll128", "simple"};
  const std::vector<std::string> channels = {"auto", "3", "12"};
  const std::vector<std::string> collectives = {"all_reduce", "all_reduce", "reduce_scatter", "all_gather"};
  // DDP buckets of several sizes, each called once a step (ResNet-18 in 4 MB buckets, LeNet's layers
  // one by one with the math on), or one call of the whole model (math on: all-reduce only).
  const std::string tables = std::string(AGGSIM_SOURCE_DIR) + "/scenarios/models/";
  const std::vector<std::pair<std::string, std::string>> models = {  // model, the algorithm's bucket keys
      {"{layers: " + tables + "resnet18.yaml, batch: 8, math: off}", ", granularity: layer, bucket: 4MB"},
      {"{layers: " + tables + "lenet.yaml, batch: 8}", ", granularity: layer, bucket: 0B"},
      {"{size: 37MB, math: off}", ""}};
  std::mt19937 pick(50);
  const auto any = [&](const std::vector<std::string>& v) { return v[pick() % v.size()]; };
  std::vector<PlanCase> cases;
  for (const auto& [platform, ranks] : platforms)
    for (const auto& a : algorithms) {
      const auto& [model, buckets] = models[pick() % models.size()];
      const bool math_on = model.find("math: off") == std::string::npos;  // reduces: all-reduce only
      cases.push_back({platform, ranks, any(networks),
                       fmt::format(", nccl_algorithm: {}, protocol: {}, channels: {}, collective: {}{}", a,
                                   any(protocols), any(channels), math_on ? "all_reduce" : any(collectives),
                                   buckets),
                       model, pick() % 2 == 0});
    }
  return cases;
}

}  // namespace

TEST_CASE("flow_plans: reuse gives per_call's outputs byte for byte", "[nccl][flow_plans]") {
  int compared = 0;
  for (const PlanCase& c : generated_cases()) {
    const std::string reference = outputs(c, "per_call");
    if (reference.empty()) continue;  // a combination NCCL refuses (an algorithm the platform cannot run)
    INFO(case_yaml(c, "reuse"));
    CHECK(outputs(c, "reuse") == reference);
    ++compared;
  }
  CHECK(compared >= 10);  // of the 20 generated, the rest refused where NCCL cannot run them
}
