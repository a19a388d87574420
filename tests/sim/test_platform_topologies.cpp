// Generated platforms: host counts, host names in rank order, node grouping of multi-GPU nodes.
#include <fmt/format.h>

#include <catch2/catch.hpp>

#include "sim/platform/topology.hpp"
#include "test_platform_probe.hpp"

using namespace aggsim;
using namespace aggsim::test;

namespace {

// Names the generators promise, in rank order: host-N, or node-N-gpu-G with several GPUs.
std::vector<std::string> expected_names(int nodes, int gpus) {
  std::vector<std::string> names;
  for (int n = 0; n < nodes; ++n)
    for (int g = 0; g < gpus; ++g)
      names.push_back(gpus == 1 ? fmt::format("host-{}", n) : fmt::format("node-{}-gpu-{}", n, g));
  return names;
}

void check_hosts(const std::string& platform, int nodes, int gpus) {
  INFO(platform);
  const auto hosts = platform_hosts(platform);
  const auto expected = expected_names(nodes, gpus);
  REQUIRE(hosts.size() == expected.size());
  for (std::size_t r = 0; r < hosts.size(); ++r) {
    INFO("rank " << r);
    CHECK(hosts[r].name == expected[r]);
    // Multi-GPU hosts carry their node index; single hosts are nodes of their own.
    CHECK(hosts[r].node == (gpus == 1 ? std::string("-") : std::to_string(static_cast<int>(r) / gpus)));
  }
  // The loader's count (checked before building) agrees with what is built.
  const Scenario sc = platform_scenario(platform);
  CHECK(sc.platform.shape.hosts() == static_cast<std::int64_t>(expected.size()));
}

}  // namespace

TEST_CASE("every topology builds its hosts in natural rank order", "[platform][topology]") {
  for (const std::string t : {"cluster", "fat_tree", "torus", "dragonfly"}) {
    // 12 is not a square, a cube or a fourth power: default shapes need padding or uneven factors.
    check_hosts(fmt::format("{{topology: {}, nodes: 12}}", t), 12, 1);
    check_hosts(fmt::format("{{topology: {}, hosts: 12}}", t), 12, 1);
    check_hosts(fmt::format("{{topology: {}, nodes: 6, gpus_per_node: 4}}", t), 6, 4);
    check_hosts(fmt::format("{{topology: {}, hosts: 24, gpus_per_node: 2}}", t), 12, 2);
  }
  check_hosts("{topology: fat_tree, nodes: 27, levels: 3}", 27, 1);
  check_hosts("{topology: fat_tree, nodes: 20, down: [4, 8], up: [1, 2], link_count: [1, 2]}", 20, 1);
  check_hosts("{topology: torus, nodes: 30, dimensions: [2, 3, 5]}", 30, 1);
  check_hosts("{topology: dragonfly, nodes: 30, groups: 2, chassis: 2, routers: 2, nodes_per_router: 4}", 30,
              1);
}

TEST_CASE("generators reach 16,384 hosts", "[platform][topology][scale]") {
  for (const std::string t : {"cluster", "fat_tree", "torus", "dragonfly"})
    check_hosts(fmt::format("{{topology: {}, nodes: 16384}}", t), 16384, 1);
  // The users' example shape (SimGrid 3.32 checks every new name against every zone, so
  // multi-GPU platforms build in time quadratic in the node count: 4,096 hosts take ~1.5 s).
  check_hosts(
      "{topology: fat_tree, nodes: 512, gpus_per_node: 8, intra_bandwidth: 300GBps, bandwidth: 200Gbps}", 512,
      8);
}

TEST_CASE("layout_of groups gpus_per_node consecutive ranks per node", "[platform][layout]") {
  for (const std::string t : {"cluster", "fat_tree", "torus", "dragonfly"}) {
    for (int gpus : {1, 3, 8}) {
      INFO(t << ", gpus_per_node " << gpus);
      const int nodes = 5;
      const std::string text = run_isolated([&] {
        const Scenario sc =
            platform_scenario(fmt::format("{{topology: {}, nodes: {}, gpus_per_node: {}}}", t, nodes, gpus));
        auto engine = probe_engine();
        build_platform(sc.platform, *engine);
        const RankLayout layout = layout_of(hosts_in_natural_order(*engine));
        std::string out;
        for (int n : layout.node_of_rank) out += fmt::format("{} ", n);
        return out;
      });
      std::string expected;
      for (int r = 0; r < nodes * gpus; ++r) expected += fmt::format("{} ", r / gpus);
      CHECK(text == expected);
    }
  }
}
