// A tree channel's sends are bound by what one channel moves (kHopperNetworkChannelGBps, 20 GB/s on
// Hopper and Blackwell): up to its parent at that rate, down shared by the copies it writes to each
// child (NCCL's runTreeSplit, src/device/all_reduce.h). Checked against closed forms on seven nodes
// of one GPU (NICs of 400 Gb/s, which bind neither): NCCL's ring moves 20 GB/s a channel, its tree
// half that where a node passes its pieces down to two children.
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <filesystem>

#include "nccl_fixture.hpp"

using namespace aggsim::test;
namespace fs = std::filesystem;

namespace {

// The one call's busbw (GB/s) and channels of a 1 GiB all-reduce forced to `algorithm` on seven
// one-GPU Blackwell nodes.
std::pair<double, int> seven_nodes(const fs::path& dir, const std::string& algorithm) {
  write_file(dir / "s.yaml",
             fmt::format("name: rate\nranks: 7\nsteps: 1\n"
                         "platform: {{topology: cluster, nodes: 7, gpus_per_node: 1, gpu: blackwell, "
                         "bandwidth: 400Gbps}}\nmodel: {{size: 1GiB, math: off}}\n"
                         "algorithm: {{name: nccl_allreduce, nccl_algorithm: {}, protocol: simple}}\n"
                         "compute: {{reduce_speed: 0}}\n",
                         algorithm));
  const auto r = run_aggsim({"run", "s.yaml", "--out", "out", "--force"}, dir);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto call = read_csv_rows(read_file(dir / "out" / "collectives.csv")).at(0);
  return {std::stod(call.at("busbw_GBps")), std::stoi(call.at("channels"))};
}

}  // namespace

TEST_CASE("a tree channel sends up at the channel's rate and shares it among the children it feeds",
          "[nccl][tree][channels]") {
  const auto dir = fresh_dir("tree-channel-rate");
  const auto [ring, ring_channels] = seven_nodes(dir, "ring");
  const auto [tree, tree_channels] = seven_nodes(dir, "tree");
  REQUIRE(ring_channels == 2);  // two per NIC
  REQUIRE(tree_channels == 2);
  // Ring: every channel at 20 GB/s, busbw = channels x 20.
  CHECK(ring == Approx(2 * 20.0).epsilon(0.03));
  // Tree: a node with two children sends each piece down twice, so 10 GB/s each; algbw = channels x
  // 10, busbw = 2 (n - 1) / n of it.
  CHECK(tree == Approx(2 * 10.0 * 2 * 6 / 7).epsilon(0.03));
  fs::remove_all(dir);
}
