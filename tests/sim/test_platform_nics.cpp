// Nodes as they are built: several NICs per node (GPU g's traffic between nodes through NIC
// g mod nics_per_node, the fabric one plane per NIC), a NIC for single-GPU nodes, the switch that
// reduces, and the fabric between nodes. Times are alpha-beta closed forms of the routes each
// generator's comment describes: latency sum + bytes / narrowest bandwidth, shared equally by the
// messages that cross a link at once.
#include <fmt/format.h>

#include <catch2/catch.hpp>

#include "support/refusal.hpp"
#include "test_platform_probe.hpp"

using namespace aggsim;
using namespace aggsim::test;

namespace {
constexpr double kBytes = 8e6;
constexpr double kNic = 400e9 / 8;  // nic_bandwidth: 400Gbps
constexpr double kIntra = 300e9;    // the default intra_bandwidth
constexpr double kIntraLat = 1e-6;  // the default intra_latency
constexpr double kLat = 1e-6;       // latency: 1us
}  // namespace

TEST_CASE("rails: GPUs that use different NICs send between nodes at once at full NIC speed",
          "[platform][nics]") {
  const auto platform = [](int nics) {
    return fmt::format(
        "{{topology: cluster, nodes: 2, gpus_per_node: 4, nics_per_node: {}, nic_bandwidth: 400Gbps, "
        "bandwidth: 400Gbps, latency: 1us}}",
        nics);
  };
  // GPU 0 -> 0 and GPU 1 -> 1 between nodes 0 and 1: intra up, NIC up, fabric up and down, NIC
  // down, intra down.
  const std::vector<std::pair<std::string, std::string>> pairs = {{"node-0-gpu-0", "node-1-gpu-0"},
                                                                  {"node-0-gpu-1", "node-1-gpu-1"}};
  const double latency = 2 * kIntraLat + 2 * kLat;
  // One NIC: both messages share it (and the node's fabric link of one plane).
  CHECK(concurrent_transfers_time(platform(1), pairs, kBytes) ==
        Approx(latency + 2 * kBytes / kNic).epsilon(1e-9));
  // Two NICs: GPU 0 uses NIC 0, GPU 1 NIC 1, and the fabric link carries two planes.
  CHECK(concurrent_transfers_time(platform(2), pairs, kBytes) ==
        Approx(latency + kBytes / kNic).epsilon(1e-9));
  // Four GPUs on two NICs: GPUs 0 and 2 share NIC 0.
  CHECK(concurrent_transfers_time(platform(2),
                                  {{"node-0-gpu-0", "node-1-gpu-1"}, {"node-0-gpu-2", "node-1-gpu-3"}},
                                  kBytes) == Approx(latency + 2 * kBytes / kNic).epsilon(1e-9));
  // Inside a node a transfer crosses the two GPU links only, whatever the NICs.
  CHECK(transfer_time(platform(4), "node-0-gpu-0", "node-0-gpu-3", kBytes) ==
        Approx(2 * kIntraLat + kBytes / kIntra).epsilon(1e-9));
}

TEST_CASE("rails: the fabric of a fat tree carries one plane per NIC", "[platform][nics]") {
  // 4 nodes, 2 per leaf switch: nodes 0 and 3 are 4 fabric links apart. Four messages from the four
  // GPUs of node 0 leave through four NICs and share the fabric links, which carry 4 x 100 Gb/s.
  const std::string tree =
      "{topology: fat_tree, nodes: 4, gpus_per_node: 4, nics_per_node: 4, nic_bandwidth: 100Gbps, "
      "bandwidth: 100Gbps, latency: 1us}";
  std::vector<std::pair<std::string, std::string>> pairs;
  for (int g = 0; g < 4; ++g)
    pairs.emplace_back(fmt::format("node-0-gpu-{}", g), fmt::format("node-3-gpu-{}", g));
  CHECK(concurrent_transfers_time(tree, pairs, kBytes) ==
        Approx(2 * kIntraLat + 4 * kLat + kBytes / (100e9 / 8)).epsilon(1e-9));
}

TEST_CASE("single-GPU nodes take a NIC: the slower of NIC and fabric link sets the speed",
          "[platform][nics]") {
  const std::string p =
      "{topology: cluster, nodes: 2, nic_bandwidth: 25Gbps, bandwidth: 100Gbps, latency: 1us}";
  // Host link (intra, 300 GB/s, 1 us), NIC, fabric up and down, NIC, host link.
  CHECK(transfer_time(p, "host-0", "host-1", kBytes) ==
        Approx(2 * kIntraLat + 2 * kLat + kBytes / (25e9 / 8)).epsilon(1e-9));
  // Without a NIC the host sits on the fabric as before.
  CHECK(transfer_time("{topology: cluster, nodes: 2, bandwidth: 100Gbps, latency: 1us}", "host-0", "host-1",
                      kBytes) == Approx(2 * kLat + kBytes / (100e9 / 8)).epsilon(1e-9));
}

TEST_CASE(
    "generated hosts carry their node, NIC, intra-node link class and switch, and the root zone its fabric",
    "[platform][nics]") {
  const std::string p =
      "{topology: cluster, nodes: 2, gpus_per_node: 4, nics_per_node: 2, intra_link: pcie, nvswitch: true, "
      "fabric: roce}";
  CHECK(host_property(p, kNicProperty) ==
        std::vector<std::string>{"0", "1", "0", "1", "0", "1", "0", "1", "fabric=roce"});
  CHECK(host_property(p, kIntraLinkProperty).front() == "pcie");
  CHECK(host_property(p, kNvswitchProperty).front() == "true");
  // Defaults: one NIC, NVLink, no reducing switch, InfiniBand.
  const std::string d = "{topology: cluster, nodes: 2, gpus_per_node: 2}";
  CHECK(host_property(d, kNicProperty) == std::vector<std::string>{"0", "0", "0", "0", "fabric=infiniband"});
  CHECK(host_property(d, kIntraLinkProperty).front() == "nvlink");
  CHECK(host_property(d, kNvswitchProperty).front() == "-");
}

TEST_CASE("an XML platform declares its fabric on the root zone and platform.fabric overrides it",
          "[platform][nics]") {
  const auto dir = fresh_dir("fabric");
  const std::string xml = (dir / "eth.xml").string();
  write_file(xml, R"(<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1">
  <cluster id="c" prefix="host-" radical="0-3" suffix="" speed="1Gf" bw="10Gbps" lat="1us">
    <prop id="aggsim_fabric" value="ethernet"/>
  </cluster>
</platform>
)");
  CHECK(host_property("{file: " + xml + "}", kNicProperty).back() == "fabric=ethernet");
  CHECK(host_property("{file: " + xml + ", fabric: roce}", kNicProperty).back() == "fabric=roce");
  CHECK(host_property(std::string("{file: ") + AGGSIM_SOURCE_DIR + "/platforms/cluster_16.xml}", kNicProperty)
            .back() == "fabric=infiniband");
  std::filesystem::remove_all(dir);
  check_refused("ranks: 1\nplatform: {file: bad.xml}\nalgorithm: {name: ring_allreduce}\n",
                {"bad.xml:4: aggsim_fabric: unknown fabric 'myrinet' (infiniband | roce | ethernet)"},
                {{"bad.xml", R"(<?xml version='1.0'?>
<platform version="4.1">
  <zone id="z" routing="Full">
    <prop id="aggsim_fabric" value="myrinet"/>
  </zone>
</platform>
)"}});
  check_refused(
      "ranks: 1\nplatform: {topology: cluster, hosts: 2, fabric: myrinet}\nalgorithm: {name: "
      "ring_allreduce}\n",
      {"bad.yaml:2:49: platform.fabric: unknown fabric 'myrinet'"});
  check_refused(
      "ranks: 1\nplatform: {topology: cluster, hosts: 2, nvswitch: true}\nalgorithm: {name: "
      "ring_allreduce}\n",
      {"nvswitch: a switch that reduces joins the GPUs of one node: needs gpus_per_node > 1"});
}
