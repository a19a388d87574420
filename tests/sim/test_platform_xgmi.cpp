// AMD Instinct nodes (`intra_link: xgmi`): the GPUs of a node in a full mesh, one xGMI link per pair
// at xgmi_bandwidth and no switch, each GPU's own link (intra_bandwidth) towards its NIC. Counts
// against the closed form n(n-1)/2, times against alpha-beta closed forms of the routes
// (sim/platform/xgmi_mesh.hpp), and the impossible combinations refused at their key.
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <algorithm>
#include <map>
#include <set>
#include <sstream>

#include "sim/platform/host_facts.hpp"
#include "support/refusal.hpp"
#include "test_platform_probe.hpp"

using namespace aggsim;
using namespace aggsim::test;

namespace {

constexpr double kBytes = 8e6;
constexpr double kXgmi = 50e9;      // xgmi_bandwidth: 50GBps
constexpr double kOwn = 64e9;       // intra_bandwidth: 64GBps (the GPU's PCIe link to its NIC)
constexpr double kNic = 400e9 / 8;  // 400Gbps
constexpr double kIntraLat = 1e-6;  // the default intra_latency
constexpr double kLat = 1e-6;

std::string mesh(int nodes, int gpus, const std::string& topology = "cluster") {
  return fmt::format(
      "{{topology: {}, nodes: {}, gpus_per_node: {}, intra_link: xgmi, xgmi_bandwidth: 50GBps, "
      "intra_bandwidth: 64GBps, nics_per_node: {}, nic_bandwidth: 400Gbps, bandwidth: 400Gbps, latency: 1us}}",
      topology, nodes, gpus, gpus);
}

// Per node: how many xGMI links it has and their distinct bandwidths (B/s).
std::map<std::string, std::pair<int, std::set<double>>> xgmi_links(const std::string& platform) {
  const std::string text = run_isolated([&] {
    const Scenario sc = platform_scenario(platform);
    auto engine = probe_engine();
    build_platform(sc.platform, *engine);
    std::string out;
    for (const auto* link : engine->get_all_links()) {
      const std::string name = link->get_name();
      // A full-duplex link is two SimGrid links, NAME_UP and NAME_DOWN: count the UP halves.
      const auto at = name.find("_xgmi-");
      if (at != std::string::npos && name.size() > 3 && name.compare(name.size() - 3, 3, "_UP") == 0)
        out += fmt::format("{} {:.17g}\n", name.substr(0, at), link->get_bandwidth());
    }
    return out;
  });
  std::map<std::string, std::pair<int, std::set<double>>> per_node;
  std::istringstream in(text);
  std::string node;
  for (double bw; in >> node >> bw;) {
    ++per_node[node].first;
    per_node[node].second.insert(bw);
  }
  return per_node;
}

}  // namespace

TEST_CASE("xgmi: each node is a full mesh of n(n-1)/2 links at xgmi_bandwidth", "[platform][xgmi]") {
  for (int g : {2, 3, 8}) {
    for (const char* topology : {"cluster", "fat_tree"}) {
      INFO(g << " GPUs a node on a " << topology);
      const auto links = xgmi_links(mesh(2, g, topology));
      REQUIRE(links.size() == 2);
      for (const auto& [node, found] : links) {
        CHECK(found.first == g * (g - 1) / 2);
        CHECK(found.second == std::set<double>{kXgmi});
      }
    }
  }
  // Without xgmi a node has no mesh.
  CHECK(xgmi_links("{topology: cluster, nodes: 2, gpus_per_node: 8}").empty());
}

TEST_CASE("xgmi: two GPUs of a node talk over their own link only, and pairs do not share links",
          "[platform][xgmi]") {
  const std::string p = mesh(2, 8);
  // One hop: the pair's xGMI link, in either direction.
  CHECK(transfer_time(p, "node-0-gpu-0", "node-0-gpu-5", kBytes) == Approx(kIntraLat + kBytes / kXgmi).epsilon(1e-9));
  CHECK(transfer_time(p, "node-0-gpu-5", "node-0-gpu-0", kBytes) == Approx(kIntraLat + kBytes / kXgmi).epsilon(1e-9));
  // GPU 0 sends to all seven peers at once: seven links, no sharing (a switch port would share).
  std::vector<std::pair<std::string, std::string>> fan_out;
  for (int b = 1; b < 8; ++b) fan_out.emplace_back("node-0-gpu-0", fmt::format("node-0-gpu-{}", b));
  CHECK(concurrent_transfers_time(p, fan_out, kBytes) == Approx(kIntraLat + kBytes / kXgmi).epsilon(1e-9));
  // 0 -> 1 and 1 -> 0 at once: the two directions of one full-duplex link.
  CHECK(concurrent_transfers_time(p, {{"node-0-gpu-0", "node-0-gpu-1"}, {"node-0-gpu-1", "node-0-gpu-0"}},
                                  kBytes) == Approx(kIntraLat + kBytes / kXgmi).epsilon(1e-9));
}

TEST_CASE("xgmi: between nodes a GPU leaves through its own link and its own NIC", "[platform][xgmi]") {
  const std::string p = mesh(2, 8);
  // Own link up (64 GB/s), NIC (50 GB/s), fabric up and down, NIC, own link down.
  const double latency = 2 * kIntraLat + 2 * kLat;
  CHECK(transfer_time(p, "node-0-gpu-3", "node-1-gpu-3", kBytes) ==
        Approx(latency + kBytes / std::min(kOwn, kNic)).epsilon(1e-9));
  // Eight GPUs at once through eight NICs: no sharing.
  std::vector<std::pair<std::string, std::string>> rails;
  for (int g = 0; g < 8; ++g) rails.emplace_back(fmt::format("node-0-gpu-{}", g), fmt::format("node-1-gpu-{}", g));
  CHECK(concurrent_transfers_time(p, rails, kBytes) == Approx(latency + kBytes / kNic).epsilon(1e-9));
  // The hosts say what their node is built of.
  const auto link = host_property(p, kIntraLinkProperty);
  CHECK(std::count(link.begin(), link.end(), "xgmi") == 16);
  // No gpu given: a mesh's GPUs are AMD Instinct (cdna3), so NCCL's model follows RCCL.
  const auto gpu = host_property(p, kGpuProperty);
  CHECK(std::count(gpu.begin(), gpu.end(), "cdna3") == 16);
}

TEST_CASE("xgmi: impossible meshes are refused at the key", "[platform][xgmi][errors]") {
  const auto scenario = [](const std::string& platform) {
    return "ranks: 2\nplatform: " + platform + "\nalgorithm: {name: ring_allreduce}\nmodel: {size: 1MB}\n";
  };
  check_refused(scenario("{topology: cluster, nodes: 2, gpus_per_node: 8, intra_link: xgmi, nvswitch: true}"),
                {"bad.yaml:2:", "nvswitch: an xGMI mesh has no switch"});
  check_refused(scenario("{topology: cluster, nodes: 4, gpus_per_node: 4, intra_link: xgmi, nvlink_domain: 2}"),
                {"nvlink_domain", "needs intra_link nvlink, not xgmi"});
  check_refused(scenario("{topology: cluster, nodes: 2, intra_link: xgmi}"),
                {"intra_link: xgmi joins the GPUs of one node", "needs gpus_per_node > 1"});
  check_refused(scenario("{topology: cluster, nodes: 2, gpus_per_node: 8, intra_link: xgmi, gpu: hopper}"),
                {"gpu: an xGMI mesh joins AMD Instinct GPUs (cdna3), not hopper"});
  check_refused(scenario("{topology: cluster, nodes: 2, gpus_per_node: 8, xgmi_bandwidth: 64GBps}"),
                {"xgmi_bandwidth", "needs intra_link xgmi, not nvlink"});
  check_refused(scenario("{system: mi300x, nodes: 2, nvswitch: true}"), {"nvswitch: an xGMI mesh has no switch"});
  check_refused(scenario("{topology: cluster, nodes: 2, gpus_per_node: 8, intra_link: xgmi, xgmi_bandwidth: fast}"),
                {"xgmi_bandwidth"});
  check_refused(scenario("{topology: cluster, nodes: 2, gpus_per_node: 8, intra_link: xgmi}\nnetwork: ns3"),
                {"intra_link: xgmi is not supported with network ns3"});
}

TEST_CASE("mi300x and mi325x stand for an 8-GPU xGMI mesh with a 400 Gb/s NIC per GPU", "[platform][xgmi][systems]") {
  for (const char* system : {"mi300x", "mi325x"}) {
    INFO(system);
    const Scenario sc = platform_scenario(fmt::format("{{system: {}, nodes: 2}}", system));
    const NodeShape& s = sc.platform.shape;
    CHECK(s.gpus_per_node == 8);
    CHECK(s.intra_link == IntraLink::xgmi);
    CHECK(s.xgmi_bandwidth == Approx(48e9));  // AMD's usable rate of a 64 GB/s link
    CHECK(s.intra_bandwidth == Approx(64e9));  // PCIe Gen 5 x16 each way
    CHECK_FALSE(s.nvswitch);
    CHECK(s.nics_per_node == 8);
    CHECK(s.nic_bandwidth == Approx(400e9 / 8));
    REQUIRE(s.gpu);
    CHECK(*s.gpu == GpuGeneration::cdna3);
    CHECK(sc.platform.fabric == Fabric::roce);
    CHECK(sc.platform.topology == "fat_tree");
  }
  // A key beside the system wins: the data sheet's peak instead of the usable rate.
  CHECK(platform_scenario("{system: mi300x, nodes: 1, xgmi_bandwidth: 64GBps}").platform.shape.xgmi_bandwidth ==
        Approx(64e9));
}
