// Named systems: `platform: {system: NAME, nodes: N}` stands for the system's generator keys over a
// full-bisection fat tree; keys given beside it win; unknown names are refused with a did-you-mean.
#include <catch2/catch.hpp>

#include "sim/core/error.hpp"
#include "sim/platform/systems.hpp"
#include "sim/scenario/scenario_loader.hpp"
#include "support/refusal.hpp"

using namespace aggsim;
using namespace aggsim::test;

namespace {

PlatformSpec platform(const std::string& spec, int ranks = 16) {
  return load_scenario_text("ranks: " + std::to_string(ranks) + "\nplatform: " + spec +
                                "\nalgorithm: {name: nccl_allreduce}\n",
                            "t.yaml")
      .platform;
}

}  // namespace

TEST_CASE("a named system stands for its vendor's values, over a full-bisection fat tree",
          "[workload][systems]") {
  // DGX H100 (NVIDIA's DGX H100 user guide): 8 GPUs on NVSwitch at 900 GB/s both ways, 8 x 400 Gb/s.
  const PlatformSpec h100 = platform("{system: dgx_h100, nodes: 2}");
  CHECK(h100.system == "dgx_h100");
  CHECK(h100.topology == "fat_tree");
  CHECK(h100.shape.nodes == 2);
  CHECK(h100.shape.gpus_per_node == 8);
  CHECK(h100.shape.nics_per_node == 8);
  CHECK(h100.shape.nic_bandwidth == Approx(400e9 / 8));
  CHECK(h100.shape.intra_bandwidth == Approx(900e9 / 2));
  CHECK(h100.shape.nvswitch);
  REQUIRE(h100.shape.gpu);
  CHECK(*h100.shape.gpu == GpuGeneration::hopper);
  CHECK(h100.fabric == Fabric::infiniband);
  // The fabric's links carry every NIC's plane: a leaf link of the tree is 8 x 400 Gb/s.
  CHECK(h100.shape.bandwidth == Approx(8 * 400e9 / 8));
  // An A100's NVSwitch does not reduce, a B200's does; the generations differ.
  const PlatformSpec a100 = platform("{system: dgx_a100, nodes: 2}");
  CHECK_FALSE(a100.shape.nvswitch);
  CHECK(*a100.shape.gpu == GpuGeneration::ampere);
  CHECK(a100.shape.nic_bandwidth == Approx(200e9 / 8));
  const PlatformSpec b200 = platform("{system: dgx_b200, nodes: 2}");
  CHECK(*b200.shape.gpu == GpuGeneration::blackwell);
  CHECK(b200.shape.intra_bandwidth == Approx(1.8e12 / 2));
}

TEST_CASE("keys beside a named system win over its values", "[workload][systems]") {
  const PlatformSpec p = platform(
      "{system: dgx_h100, nodes: 4, topology: cluster, fabric: roce, nics_per_node: 4, bandwidth: 100Gbps, "
      "gpu: blackwell}",
      32);
  CHECK(p.topology == "cluster");
  CHECK(p.fabric == Fabric::roce);
  CHECK(p.shape.nics_per_node == 4);
  CHECK(p.shape.bandwidth == Approx(4 * 100e9 / 8));
  CHECK(p.shape.nic_bandwidth == Approx(400e9 / 8));  // the system's, not given
  CHECK(*p.shape.gpu == GpuGeneration::blackwell);
  CHECK(p.shape.gpus_per_node == 8);
}

TEST_CASE("unknown systems, and a system beside a platform file, are refused where they are written",
          "[workload][systems][errors]") {
  const std::string tail = "\nmodel: {size: 1MB}\nalgorithm: {name: nccl_allreduce}\n";
  check_refused(
      "ranks: 8\nplatform: {system: dgx_h10, nodes: 1}" + tail,
      {"bad.yaml:2:", "unknown system 'dgx_h10'", "did you mean 'dgx_h100'?", "aggsim list --systems"});
  check_refused("ranks: 8\nplatform: {system: dgx_h100, file: cluster_16}" + tail,
                {"bad.yaml:2:", "give either system or file"});
  check_refused("ranks: 8\nplatform: {system: dgx_h100}" + tail, {"bad.yaml:2:", "needs 'nodes'"});
  check_refused("ranks: 8\nplatform: {topology: cluster, nodes: 1, gpus_per_node: 8, gpu: hoper}" + tail,
                {"bad.yaml:2:", "platform.gpu: must be one of volta | ampere | hopper | blackwell | cdna3",
                 "did you mean 'hopper'"});
}

TEST_CASE("aggsim list --systems prints each system with its values and sources", "[workload][systems]") {
  const auto r = run_aggsim({"list", "--systems"});
  REQUIRE(r.exit_code == 0);
  for (const SystemInfo& s : system_table()) {
    INFO(s.name);
    CHECK(r.out.find(s.name) != std::string::npos);
    for (const std::string& source : s.sources) CHECK(r.out.find(source) != std::string::npos);
    CHECK_FALSE(s.sources.empty());
  }
  CHECK(r.out.find("intra_bandwidth: 450GBps") != std::string::npos);
}

TEST_CASE("resolved.yaml names the system and every value it stood for, and reads back the same",
          "[workload][systems]") {
  const Scenario sc = load_scenario_text(
      "ranks: 16\nplatform: {system: dgx_b200, nodes: 2, bandwidth: 200Gbps}\nalgorithm: {name: nccl_allreduce}\n",
      "t.yaml");
  const std::string resolved = resolved_yaml(sc);
  CHECK(resolved.find("system: dgx_b200") != std::string::npos);
  CHECK(resolved.find("gpu: blackwell") != std::string::npos);
  const Scenario again = load_scenario_text(resolved, "resolved.yaml");
  CHECK(resolved_yaml(again) == resolved);
  CHECK(again.platform.shape.bandwidth == Approx(8 * 200e9 / 8));
  CHECK(again.platform.shape.intra_bandwidth == Approx(900e9));
}
