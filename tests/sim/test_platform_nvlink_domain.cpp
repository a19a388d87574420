// NVLink domains across nodes (platform.nvlink_domain, the NVL72's 18 trays of 4 GPUs): the GPUs of
// a domain reach each other over their own NVLink ports only, whichever tray they sit in, while
// traffic between domains leaves through the sending GPU's own NIC in its own tray. Times are
// alpha-beta closed forms of those routes (latency sum + bytes / narrowest bandwidth). Impossible
// domains are refused at the key.
#include <fmt/format.h>

#include <catch2/catch.hpp>

#include "support/refusal.hpp"
#include "test_platform_probe.hpp"

using namespace aggsim;
using namespace aggsim::test;

namespace {
constexpr double kBytes = 8e6;
constexpr double kNic = 400e9 / 8;   // nic_bandwidth: 400Gbps
constexpr double kIntra = 900e9;     // intra_bandwidth: 900GBps
constexpr double kIntraLat = 0.5e-6;  // intra_latency: 0.5us
constexpr double kLat = 1e-6;        // latency: 1us

// Four trays of 2 GPUs, 2 trays a domain, 2 NICs a tray.
std::string domains(const std::string& topology) {
  return fmt::format(
      "{{topology: {}, nodes: 4, gpus_per_node: 2, nvlink_domain: 2, nics_per_node: 2, "
      "nic_bandwidth: 400Gbps, bandwidth: 400Gbps, latency: 1us, intra_bandwidth: 900GBps, "
      "intra_latency: 0.5us, nvswitch: true}}",
      topology);
}
}  // namespace

TEST_CASE("nvlink_domain: GPUs of different trays of one domain talk over NVLink only",
          "[platform][nvlink_domain]") {
  for (const std::string topology : {"cluster", "fat_tree"}) {
    INFO(topology);
    // Tray 0 and tray 1 share domain 0: two GPU links, no NIC, no fabric.
    CHECK(transfer_time(domains(topology), "node-0-gpu-0", "node-1-gpu-1", kBytes) ==
          Approx(2 * kIntraLat + kBytes / kIntra).epsilon(1e-9));
    // Tray 1 to tray 2 crosses domains: GPU link, NIC, the fabric, NIC, GPU link.
    const double between = transfer_time(domains(topology), "node-1-gpu-0", "node-2-gpu-0", kBytes);
    CHECK(between > 2 * kIntraLat + 2 * kLat + kBytes / kNic * 0.999999);
  }
  // On the star cluster the route between domains is exactly two fabric links, two NICs.
  CHECK(transfer_time(domains("cluster"), "node-1-gpu-0", "node-2-gpu-0", kBytes) ==
        Approx(2 * kIntraLat + 2 * kLat + kBytes / kNic).epsilon(1e-9));
}

TEST_CASE("nvlink_domain: each tray keeps its own NICs, and the domain's fabric link carries them all",
          "[platform][nvlink_domain]") {
  // The four GPUs of domain 0 send to the four of domain 1 at once: each uses its own NIC (GPU g of
  // a tray NIC g of that tray), and the domain's fabric link carries 4 planes of 400 Gb/s, so all
  // four move at one NIC's full speed.
  std::vector<std::pair<std::string, std::string>> pairs;
  for (int t = 0; t < 2; ++t)
    for (int g = 0; g < 2; ++g)
      pairs.emplace_back(fmt::format("node-{}-gpu-{}", t, g), fmt::format("node-{}-gpu-{}", t + 2, g));
  CHECK(concurrent_transfers_time(domains("cluster"), pairs, kBytes) ==
        Approx(2 * kIntraLat + 2 * kLat + kBytes / kNic).epsilon(1e-9));
  // The hosts name their tray as their node and the domain they share.
  const auto node = host_property(domains("cluster"), kNodeProperty);
  const auto domain = host_property(domains("cluster"), kNvlinkDomainProperty);
  CHECK(node == std::vector<std::string>{"0", "0", "1", "1", "2", "2", "3", "3", "fabric=infiniband"});
  CHECK(domain == std::vector<std::string>{"0", "0", "0", "0", "1", "1", "1", "1", "fabric=infiniband"});
}

TEST_CASE("nvlink_domain: impossible domains are refused at the key", "[platform][nvlink_domain][errors]") {
  const auto scenario = [](const std::string& platform) {
    return "ranks: 2\nplatform: " + platform + "\nalgorithm: {name: ring_allreduce}\nmodel: {size: 1MB}\n";
  };
  check_refused(scenario("{topology: cluster, nodes: 20, gpus_per_node: 4, nvlink_domain: 18}"),
                {"bad.yaml:2:", "nvlink_domain: 20 nodes are not a whole number of NVLink domains of 18"});
  check_refused(scenario("{topology: cluster, nodes: 4, nvlink_domain: 2}"),
                {"nvlink_domain", "needs gpus_per_node > 1"});
  check_refused(scenario("{topology: cluster, nodes: 4, gpus_per_node: 2, nvlink_domain: 2, intra_link: pcie}"),
                {"nvlink_domain", "needs intra_link nvlink, not pcie"});
  check_refused(scenario("{topology: cluster, nodes: 4, gpus_per_node: 2, nvlink_domain: 0}"), {"nvlink_domain"});
  check_refused(scenario("{system: gb200_nvl72, nodes: 4}"),
                {"nvlink_domain: 4 nodes are not a whole number of NVLink domains of 18"});
  check_refused(scenario("{topology: cluster, nodes: 4, gpus_per_node: 2, nvlink_domain: 2, overrides: "
                         "[{nodes: 1, bandwidth: 100Gbps}]}"),
                {"bandwidth", "belongs to the whole NVLink domain"});
}
