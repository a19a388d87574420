// Multi-node NVLink as NCCL 2.30.7 sees it (src/graph/topo.cc fuses the trays of one NVLink clique
// into one topology): an NVL72 rack of 18 trays x 4 GPUs is one NCCL node, so NCCL runs NVLS over
// all 72 GPUs exactly as on one node of 72 GPUs on the same switch, and between racks it runs
// NVLS-Tree (off on one node).
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <filesystem>

#include "nccl_fixture.hpp"

using namespace aggsim::test;
namespace fs = std::filesystem;

namespace {

std::string scenario(const std::string& platform, int ranks, const std::string& size) {
  return fmt::format(
      "name: domain\nranks: {}\nsteps: 1\nplatform: {}\nmodel: {{size: {}, math: off}}\n"
      "algorithm: {{name: nccl_allreduce, op: sum}}\ncompute: {{reduce_speed: 0}}\n",
      ranks, platform, size);
}

// The run's one call: its "algorithm/protocol" and time_s.
struct Call {
  std::string choice;  // "nvls/simple"
  double seconds = 0;
};

Call run_one(const fs::path& dir, const std::string& yaml) {
  const auto [choice, seconds] = nccl_call_of(dir, yaml);
  return {choice, seconds};
}

}  // namespace

TEST_CASE("an NVL72 rack runs NVLS over its 72 GPUs as one node of 72 GPUs on one switch",
          "[nccl][nvlink_domain]") {
  const auto dir = fresh_dir("nvl72-one");
  // The same GPUs, links and switch as one node: NCCL's view, choice and every flow must be the same.
  const std::string one_node =
      "{topology: cluster, nodes: 1, gpus_per_node: 72, gpu: blackwell, intra_bandwidth: 900GBps, "
      "nvswitch: true}";
  for (const std::string size : {"1MiB", "1GiB"}) {
    INFO(size);
    const Call rack = run_one(dir, scenario("{system: gb200_nvl72, nodes: 18}", 72, size));
    const Call node = run_one(dir, scenario(one_node, 72, size));
    CHECK(rack.choice == "nvls/simple");
    CHECK(rack.choice == node.choice);
    CHECK(rack.seconds == Approx(node.seconds).epsilon(1e-12));
  }
  // Without the domain the 18 trays are 18 NCCL nodes of 4 GPUs joined by their NICs: no longer NVLS
  // over the rack, and slower.
  const Call trays = run_one(dir, scenario("{system: gb200_nvl72, nodes: 18, nvlink_domain: 1}", 72, "1GiB"));
  const Call rack = run_one(dir, scenario("{system: gb200_nvl72, nodes: 18}", 72, "1GiB"));
  CHECK(trays.choice != "nvls/simple");
  CHECK(trays.seconds > 2 * rack.seconds);
  fs::remove_all(dir);
}

TEST_CASE("two NVL72 racks: NCCL counts two nodes and runs NVLS-Tree between them", "[nccl][nvlink_domain]") {
  const auto dir = fresh_dir("nvl72-two");
  const Call two = run_one(dir, scenario("{system: gb200_nvl72, nodes: 36}", 144, "1GiB"));
  CHECK(two.choice == "nvls_tree/simple");
  fs::remove_all(dir);
}
