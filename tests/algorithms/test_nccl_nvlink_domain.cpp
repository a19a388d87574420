// Multi-node NVLink as NCCL 2.30.7 sees it (src/graph/topo.cc fuses the trays of one NVLink clique
// into one topology): an NVL72 rack of 18 trays x 4 GPUs is one NCCL node, so NCCL runs NVLS over
// all 72 GPUs exactly as on one node of 72 GPUs on the same switch, and between racks it runs
// NVLS-Tree (off on one node), or with NVLS off ring and tree on NCCL 2.26.2's graph of the clique.
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <filesystem>

#include "algorithms/nccl/nccl_tuning.hpp"
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

// Across racks NCCL 2.26.2's ring and tree graph of the fused clique (src/graph/search.cc): channels
// of 48 GB/s (its fastest speed between nodes), each through all 72 GPUs, so a GPU's 721.8 GB/s of
// NVLink carries 15 of them (15 x 48 = 720; a 16th would need 768) and the search stops there, 15
// of the rack's 72 NICs; the communicator runs them twice: 30 channels. A domain of two trays of
// 4 GPUs has 8 NICs, and they bound it first: 8 channels of 48 GB/s.
TEST_CASE("across NVL72 racks NCCL's graph has 15 channels of 48 GB/s, run as 30", "[nccl][nvlink_domain]") {
  const aggsim::DomainGraph rack = aggsim::nccl_domain_graph(721.8, 72, 50);
  CHECK(rack.channels == 15);
  CHECK(rack.speed == 48);
  const aggsim::DomainGraph two_trays = aggsim::nccl_domain_graph(721.8, 8, 50);
  CHECK(two_trays.channels == 8);
  CHECK(two_trays.speed == 48);
  const auto dir = fresh_dir("nvl72-three");
  const std::string off = "algorithm: {name: nccl_allreduce, op: sum, nvls: off}";
  auto three_racks = [&](const std::string& extra) {
    std::string yaml = scenario("{system: gb200_nvl72, nodes: 54" + extra + "}", 216, "1GiB");
    const std::string on = "algorithm: {name: nccl_allreduce, op: sum}";
    yaml.replace(yaml.find(on), on.size(), off);
    write_file(dir / "s.yaml", yaml);
    const auto r = run_aggsim({"run", "s.yaml", "--out", "out", "--force"}, dir);
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    return read_csv_rows(read_file(dir / "out" / "collectives.csv")).at(0);
  };
  const auto call = three_racks("");
  CHECK(call.at("channels") == "30");
  // The NICs hang off the Grace CPUs (PHB): NCCL keeps LL128 off across racks; through another GPU
  // (PXN, as on Hopper's boards) it would run it.
  CHECK(call.at("protocol") == "simple");
  CHECK(three_racks(", gpu_nic_path: pxn").at("protocol") == "ll128");
  fs::remove_all(dir);
}
