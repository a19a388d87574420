// The XML platforms shipped in platforms/: host counts and names, and the route costs their
// comments and platforms/README.md state, under alpha-beta.
#include <fmt/format.h>

#include <catch2/catch.hpp>

#include "test_platform_probe.hpp"

using namespace aggsim;
using namespace aggsim::test;

namespace {

std::string shipped(const std::string& name) {
  return fmt::format("{{file: {}/platforms/{}}}", AGGSIM_SOURCE_DIR, name);
}

constexpr double kBytes = 8e6;

}  // namespace

TEST_CASE("shipped platforms have the documented hosts in rank order", "[platform][shipped]") {
  for (auto [file, count] : {std::pair{"cluster_16.xml", 16},
                             {"cluster_64.xml", 64},
                             {"cluster_1024.xml", 1024},
                             {"fat_tree_128.xml", 128},
                             {"torus_64.xml", 64},
                             {"dragonfly_72.xml", 72}}) {
    INFO(file);
    const auto hosts = platform_hosts(shipped(file));
    REQUIRE(hosts.size() == static_cast<std::size_t>(count));
    for (int r = 0; r < count; ++r)
      CHECK(hosts[static_cast<std::size_t>(r)].name == fmt::format("host-{}", r));
  }
  const auto dgx = platform_hosts(shipped("dgx_4x8.xml"));
  REQUIRE(dgx.size() == 32);
  for (int r = 0; r < 32; ++r) {
    CHECK(dgx[static_cast<std::size_t>(r)].name == fmt::format("node-{}-gpu-{}", r / 8, r % 8));
    CHECK(dgx[static_cast<std::size_t>(r)].node == std::to_string(r / 8));
  }
}

TEST_CASE("shipped platforms' route costs match their description", "[platform][shipped][route]") {
  // InfiniBand HDR tree: 200 Gb/s = 25 GB/s, 0.5 us per link, 16 hosts per leaf switch.
  const std::string tree = shipped("fat_tree_128.xml");
  CHECK(transfer_time(tree, "host-0", "host-15", kBytes) == Approx(2 * 0.5e-6 + kBytes / 25e9).epsilon(1e-9));
  CHECK(transfer_time(tree, "host-0", "host-16", kBytes) == Approx(4 * 0.5e-6 + kBytes / 25e9).epsilon(1e-9));
  // 4x4x4 torus, 100 Gb/s = 12.5 GB/s: host-42 is (2,2,2), 6 hops from host-0.
  const std::string torus = shipped("torus_64.xml");
  CHECK(transfer_time(torus, "host-0", "host-1", kBytes) == Approx(0.5e-6 + kBytes / 12.5e9).epsilon(1e-9));
  CHECK(transfer_time(torus, "host-0", "host-42", kBytes) ==
        Approx(6 * 0.5e-6 + kBytes / 12.5e9).epsilon(1e-9));
  // DGX-like nodes: GPU links 300 GB/s and 1 us; NIC and fabric links 1.6 Tb/s = 200 GB/s.
  const double intra = 2e-6 + kBytes / 300e9, inter = 4e-6 + kBytes / 200e9;
  const std::string dgx = shipped("dgx_4x8.xml");
  CHECK(transfer_time(dgx, "node-2-gpu-1", "node-2-gpu-6", kBytes) == Approx(intra).epsilon(1e-9));
  CHECK(transfer_time(dgx, "node-0-gpu-3", "node-3-gpu-5", kBytes) == Approx(inter).epsilon(1e-9));
  // ... which is what the generator builds from the same figures.
  const std::string generated =
      "{topology: cluster, nodes: 4, gpus_per_node: 8, intra_bandwidth: 300GBps, intra_latency: 1us, "
      "bandwidth: 1600Gbps, latency: 1us}";
  CHECK(transfer_time(generated, "node-2-gpu-1", "node-2-gpu-6", kBytes) == Approx(intra).epsilon(1e-9));
  CHECK(transfer_time(generated, "node-0-gpu-3", "node-3-gpu-5", kBytes) == Approx(inter).epsilon(1e-9));
}
