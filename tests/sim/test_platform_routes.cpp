// Route costs of the generated platforms under alpha-beta: one message of S bytes costs the sum of
// the latencies of the links it crosses plus S over the smallest bandwidth among them. The hop
// counts below are derived from each generator's structure (see the comments atop its file).
#include <fmt/format.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdlib>

#include "test_platform_probe.hpp"

using namespace aggsim;
using namespace aggsim::test;

namespace {

constexpr double kBytes = 4e6;
constexpr double kLat = 1e-6;   // `latency: 1us`
constexpr double kBw = 1.25e9;  // `bandwidth: 10Gbps`

double alpha_beta(int links, double latency, double bandwidth) {
  return links * latency + kBytes / bandwidth;
}

void check_route(const std::string& platform, const std::string& from, const std::string& to,
                 double expected) {
  INFO(platform << ": " << from << " -> " << to);
  CHECK(transfer_time(platform, from, to, kBytes) == Approx(expected).epsilon(1e-9));
}

}  // namespace

TEST_CASE("cluster: two links between any two hosts", "[platform][route]") {
  const std::string p = "{topology: cluster, nodes: 8, bandwidth: 10Gbps, latency: 1us}";
  check_route(p, "host-0", "host-7", alpha_beta(2, kLat, kBw));
  check_route(p, "host-5", "host-2", alpha_beta(2, kLat, kBw));
}

TEST_CASE("multi-GPU nodes: intra-node over two GPU links, inter-node through both NICs",
          "[platform][route]") {
  // GPU links 300 GB/s and 2 us; NIC 25 Gb/s (below the 100 Gb/s fabric, so the NIC limits).
  const double intra_bw = 300e9, intra_lat = 2e-6, nic_bw = 25e9 / 8, fabric_bw = 100e9 / 8;
  const std::string shape =
      "nodes: 4, gpus_per_node: 4, intra_bandwidth: 300GBps, intra_latency: 2us, nic_bandwidth: 25Gbps, "
      "bandwidth: 100Gbps, latency: 1us";
  const double intra = alpha_beta(2, intra_lat, intra_bw);
  // GPU up, NIC (no latency), fabric route, NIC, GPU down.
  auto inter = [&](int fabric_links) {
    return 2 * intra_lat + fabric_links * kLat + kBytes / std::min({intra_bw, nic_bw, fabric_bw});
  };
  const std::string cluster = "{topology: cluster, " + shape + "}";
  check_route(cluster, "node-1-gpu-0", "node-1-gpu-3", intra);
  check_route(cluster, "node-0-gpu-2", "node-3-gpu-1", inter(2));
  // A 2-level tree over 4 nodes has 2 nodes per leaf switch: nodes 0 and 1 share one.
  const std::string tree = "{topology: fat_tree, " + shape + "}";
  check_route(tree, "node-2-gpu-0", "node-2-gpu-1", intra);
  check_route(tree, "node-0-gpu-0", "node-1-gpu-3", inter(2));
  check_route(tree, "node-0-gpu-0", "node-3-gpu-3", inter(4));
  // 4 nodes: torus 2x2; node 3 is (1,1), two hops from node 0.
  const std::string torus = "{topology: torus, " + shape + "}";
  check_route(torus, "node-0-gpu-1", "node-1-gpu-2", inter(1));
  check_route(torus, "node-0-gpu-1", "node-3-gpu-2", inter(2));
  // The default NIC is as fast as the fabric: then the fabric bandwidth limits.
  check_route("{topology: cluster, nodes: 2, gpus_per_node: 2, bandwidth: 10Gbps, latency: 1us}",
              "node-0-gpu-0", "node-1-gpu-0", 2 * 1e-6 + 2 * kLat + kBytes / kBw);
}

TEST_CASE("fat tree: 2 links under one leaf switch, 2 per level up to the common ancestor",
          "[platform][route]") {
  // 16 nodes, default 2 levels: down [4, 4], so host-0..3 share a leaf switch.
  const std::string two = "{topology: fat_tree, nodes: 16, bandwidth: 10Gbps, latency: 1us}";
  check_route(two, "host-0", "host-3", alpha_beta(2, kLat, kBw));
  check_route(two, "host-0", "host-4", alpha_beta(4, kLat, kBw));
  check_route(two, "host-13", "host-2", alpha_beta(4, kLat, kBw));
  // 3 levels of 3: host-0..2 share a leaf, host-0..8 a level-2 switch.
  const std::string three = "{topology: fat_tree, nodes: 27, levels: 3, bandwidth: 10Gbps, latency: 1us}";
  check_route(three, "host-0", "host-2", alpha_beta(2, kLat, kBw));
  check_route(three, "host-0", "host-8", alpha_beta(4, kLat, kBw));
  check_route(three, "host-0", "host-26", alpha_beta(6, kLat, kBw));
}

TEST_CASE("torus: hops x latency, the short way round in each dimension", "[platform][route]") {
  // 4x4x4: host-i sits at (i % 4, i / 4 % 4, i / 16), dimension 0 varying fastest.
  const std::string p =
      "{topology: torus, nodes: 64, dimensions: [4, 4, 4], bandwidth: 10Gbps, latency: 1us}";
  auto hops = [](int a, int b) {
    int total = 0;
    for (int d = 0, scale = 1; d < 3; ++d, scale *= 4) {
      const int delta = std::abs(a / scale % 4 - b / scale % 4);
      total += std::min(delta, 4 - delta);
    }
    return total;
  };
  for (auto [a, b] : {std::pair{0, 1}, {0, 3}, {0, 16}, {0, 42}, {0, 63}, {21, 6}, {5, 58}}) {
    INFO("hops " << hops(a, b));
    check_route(p, fmt::format("host-{}", a), fmt::format("host-{}", b), alpha_beta(hops(a, b), kLat, kBw));
  }
}

TEST_CASE("dragonfly: local, green, black and blue links of minimal routing", "[platform][route]") {
  // 3 groups x 2 chassis x 3 routers x 2 nodes = 36 nodes; node i is (group, chassis, router, slot)
  // = (i / 12, i / 6 % 2, i / 2 % 3, i % 2).
  const std::string p =
      "{topology: dragonfly, nodes: 36, groups: 3, chassis: 2, routers: 3, nodes_per_router: 2, "
      "bandwidth: 10Gbps, latency: 1us}";
  struct Coord {
    int g, c, r;
  };
  auto at = [](int i) { return Coord{i / 12, i / 6 % 2, i / 2 % 3}; };
  auto links = [&](int a, int b) {
    const Coord s = at(a), t = at(b);
    int n = 2;  // node -> router, router -> node
    if (s.g == t.g && s.c == t.c && s.r == t.r) return n;
    int router = s.r, chassis = s.c;
    if (s.g != t.g) {
      // To the router wired to the target group (router t.g of chassis 0), the blue link, and on
      // from router s.g of the target group's chassis 0.
      if (router != t.g) ++n;
      if (chassis != 0) ++n;
      ++n;
      router = s.g;
      chassis = 0;
    }
    if (router != t.r) ++n;   // green, within the chassis
    if (chassis != t.c) ++n;  // black, to the target chassis
    return n;
  };
  for (auto [a, b] : {std::pair{0, 1}, {0, 2}, {0, 6}, {0, 8}, {0, 13}, {0, 35}, {7, 30}, {17, 4}}) {
    INFO("links " << links(a, b));
    check_route(p, fmt::format("host-{}", a), fmt::format("host-{}", b), alpha_beta(links(a, b), kLat, kBw));
  }
}
