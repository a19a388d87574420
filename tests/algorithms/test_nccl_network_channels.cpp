// What one NCCL channel moves over the network (kHopperNetworkChannelGBps): on Hopper and Blackwell a channel's
// network connection moves at most 20 GB/s, so a NIC fed by too few channels runs below its rate,
// and more channels (NCCL_MIN_CTAS) bring it back to the NIC's; both movements honour the bound.
// Closed forms: a ring all-reduce of S bytes on p ranks moves 2 (p - 1) / p x S / C over each of
// its C channels' edges, so its busbw is C x (each channel's rate).
#include <catch2/catch.hpp>
#include <string>

#include "algorithms/nccl/protocol.hpp"
#include "nccl_fixture.hpp"

using namespace aggsim;
using namespace aggsim::test;

namespace {

// Two nodes of 2 GPUs (no switch that reduces), one 400 Gb/s NIC (50 GB/s) each: both channels of
// a 2-channel ring leave a node through its one NIC, 25 GB/s each if the NIC alone bound them.
std::string two_nodes(const std::string& gpu) {
  return "{topology: cluster, nodes: 2, gpus_per_node: 2, intra_bandwidth: 450GBps, intra_latency: 0.5us, "
         "nics_per_node: 1, nic_bandwidth: 400Gbps, bandwidth: 400Gbps, latency: 1us, gpu: " +
         gpu + "}";
}

// busbw (GB/s) of a 1 GiB ring/Simple all-reduce on `channels` channels.
double ring_busbw(const std::string& gpu, int channels, const std::string& movement = "flow") {
  const auto rows =
      nccl_perf_rows(two_nodes(gpu), 4, "1GiB", "1GiB",
                     ", nccl_algorithm: ring, protocol: simple, channels: " + std::to_string(channels) +
                         ", movement: " + movement);
  REQUIRE(rows.size() == 1);
  return std::stod(rows[0].at("busbw_GBps"));
}

}  // namespace

TEST_CASE("an H100 channel moves 20 GB/s over the network: two channels leave a 50 GB/s NIC at 40",
          "[nccl][channels]") {
  // 2 channels: each capped at 20 GB/s (not the NIC's 25 each); 4 channels: 12.5 each, the NIC bounds.
  CHECK(ring_busbw("hopper", 2) == Approx(2 * kHopperNetworkChannelGBps).epsilon(0.02));
  CHECK(ring_busbw("hopper", 4) == Approx(50).epsilon(0.02));
  // Blackwell's nodes carry the same ConnectX-7 NICs and NCCL transport: the same bound.
  CHECK(ring_busbw("blackwell", 2) == Approx(2 * kHopperNetworkChannelGBps).epsilon(0.02));
  // Older generations have no published per-channel bound: the NIC bounds two channels too.
  CHECK(ring_busbw("ampere", 2) == Approx(50).epsilon(0.02));
}

TEST_CASE("the chunk-level movement honours the channel's network rate as the flow level does",
          "[nccl][channels][movement]") {
  CHECK(ring_busbw("hopper", 2, "chunk") == Approx(2 * kHopperNetworkChannelGBps).epsilon(0.02));
  CHECK(ring_busbw("hopper", 4, "chunk") == Approx(50).epsilon(0.02));
}
