// NCCL's INFO lines: the per-call tuning line in each format NCCL has printed, read from lines
// posted in public threads (tests/data/nccl_info/) and from NCCL's own format strings, and the
// channel counts of the init lines.
#include <catch2/catch.hpp>
#include <filesystem>
#include <map>
#include <sstream>

#include "algorithms/nccl/calibration/nccl_info_lines.hpp"
#include "support/cli.hpp"

using namespace aggsim;
namespace fs = std::filesystem;

namespace {

const fs::path kData = fs::path(AGGSIM_SOURCE_DIR) / "tests" / "data" / "nccl_info";

TuningLine tuning(const std::string& line) {
  const auto message = nccl_info_message(line);
  REQUIRE(message);
  const TuningParse parse = parse_tuning_message(*message);
  REQUIRE(parse.is_tuning);
  INFO(parse.why);
  REQUIRE(parse.line);
  return *parse.line;
}

std::string garbled(const std::string& message) {
  const TuningParse parse = parse_tuning_message(message);
  REQUIRE(parse.is_tuning);
  CHECK_FALSE(parse.line);
  return parse.why;
}

}  // namespace

TEST_CASE("tuning lines of NCCL 2.20 - 2.22 (numbers, no function) as posted in NVIDIA/nccl#1453 and #1595",
          "[readers][nccl_info]") {
  // Each posted line, counted by (bytes, algorithm, protocol). nccl_common.h of 2.22: algorithm 0
  // Tree, 1 Ring; protocol 0 LL, 1 LL128, 2 Simple.
  std::map<std::string, int> seen;
  for (const char* file :
       {"issue1453_h100_numeric_tuning_excerpts.log", "issue1595_numeric_tuning_lines.log"}) {
    std::istringstream in(aggsim::test::read_file(kData / file));
    for (std::string line; std::getline(in, line);) {
      const auto message = nccl_info_message(line);
      if (!message) continue;
      const TuningParse parse = parse_tuning_message(*message);
      if (!parse.is_tuning) continue;
      REQUIRE(parse.line);
      const TuningLine& t = *parse.line;
      CHECK(t.function.empty());
      CHECK(t.collective.empty());
      CHECK_FALSE(t.bytes_per_rank);
      CHECK(t.choice.channels == 0);
      ++seen[std::to_string(t.bytes) + " " + t.choice.nccl_algorithm + "/" + t.choice.protocol];
    }
  }
  const std::map<std::string, int> expected = {{"8589934592 ring/simple", 1},
                                               {"4 tree/ll", 6},
                                               {"8 tree/ll", 14},
                                               {"256 tree/ll", 11},
                                               {"512 tree/ll", 2},
                                               {"262144 tree/ll128", 14},
                                               {"1026048 ring/simple", 1},
                                               {"805306368 ring/simple", 3}};
  CHECK(seen == expected);
}

TEST_CASE(
    "tuning lines of NCCL 2.23 - 2.30, from the format strings of src/enqueue.cc and symmetric_sched.cc",
    "[readers][nccl_info]") {
  // 2.23.4: "%s: %ld Bytes -> Algo %d proto %d time %f" (the whole buffer of an all-gather).
  auto t = tuning("n1:5:5 [0] NCCL INFO AllGather: 8388608 Bytes -> Algo 6 proto 2 time 120.500000");
  CHECK(t.function == "AllGather");
  CHECK(t.collective == "all_gather");
  CHECK(t.bytes == 8388608);
  CHECK_FALSE(t.bytes_per_rank);
  CHECK(t.choice.nccl_algorithm == "pat");
  CHECK(t.choice.protocol == "simple");
  // 2.24.3 on: "%s: %ld Bytes -> Algo %s proto %s channel{Lo..Hi}={%d..%d}" with ncclAlgoToString
  // ("NVLS_TREE") and ncclProtoToString ("SIMPLE").
  t = tuning(
      "n1:5:5 [0] NCCL INFO AllReduce: 16777216 Bytes -> Algo NVLS_TREE proto SIMPLE "
      "channel{Lo..Hi}={0..15}");
  CHECK(t.collective == "all_reduce");
  CHECK(t.bytes_per_rank);
  CHECK(t.choice.nccl_algorithm == "nvls_tree");
  CHECK(t.choice.protocol == "simple");
  CHECK(t.choice.channels == 16);
  t = tuning(
      "n1:5:5 [0] NCCL INFO ReduceScatter: 65536 Bytes -> Algo RING proto LL128 channel{Lo..Hi}={2..5}");
  CHECK(t.collective == "reduce_scatter");
  CHECK(t.choice.nccl_algorithm == "ring");
  CHECK(t.choice.protocol == "ll128");
  CHECK(t.choice.channels == 4);
  t = tuning(
      "n1:5:5 [0] NCCL INFO Broadcast: 4096 Bytes -> Algo COLLNET_CHAIN proto LL channel{Lo..Hi}={0..0}");
  CHECK(t.collective == "broadcast");
  CHECK(t.choice.nccl_algorithm == "collnet_chain");
  CHECK(t.choice.channels == 1);
  // ncclAlgoStr's spelling and an "nChannels" count.
  t = tuning("h:1:2 [3] NCCL INFO AllReduce: 1048576 Bytes -> Algo CollNetDirect proto Simple nChannels 8");
  CHECK(t.choice.nccl_algorithm == "collnet_direct");
  CHECK(t.choice.channels == 8);
  // 2.27.3 on: "%s [Symmetric]: %ld Bytes -> Kernel %s nchannels %d nthreads %d[ nWorks %d]".
  t = tuning(
      "h:1:2 [0] NCCL INFO AllReduce [Symmetric]: 1048576 Bytes -> Kernel AllReduce_RSxLD_AGxST nchannels 24 "
      "nthreads 512 nWorks 1");
  CHECK(t.collective == "all_reduce");
  CHECK(t.choice.nccl_algorithm == "symmetric");
  CHECK(t.choice.protocol.empty());
  CHECK(t.choice.channels == 24);
  // 2.29.2 on: "%s [Copy Engine]: %ld Bytes -> cudaMemcpy%s".
  t = tuning(
      "h:1:2 [0] NCCL INFO AllGather [Copy Engine]: 4194304 Bytes -> cudaMemcpy; CE synchronization with "
      "NVLS");
  CHECK(t.choice.nccl_algorithm == "copy_engine");
  CHECK(t.choice.channels == 0);
  // A function we have no rows for is read, and names no collective.
  t = tuning("h:1:2 [0] NCCL INFO Reduce: 4096 Bytes -> Algo RING proto LL channel{Lo..Hi}={0..1}");
  CHECK(t.function == "Reduce");
  CHECK(t.collective.empty());
}

TEST_CASE("garbled tuning lines say why, and other INFO lines are not tuning lines",
          "[readers][nccl_info][malformed]") {
  CHECK(garbled("AllReduce: 12x Bytes -> Algo RING proto LL").find("byte count '12x'") != std::string::npos);
  CHECK(garbled("AllReduce: 99999999999999999999 Bytes -> Algo RING proto LL").find("below 2^63") !=
        std::string::npos);
  CHECK(
      garbled("AllReduce: 64 Bytes -> Algo 7 proto 2 time 1.0").find("'7' is not one of NCCL's algorithms") !=
      std::string::npos);
  CHECK(garbled("AllReduce: 64 Bytes -> Algo RING proto LL256").find("protocols") != std::string::npos);
  CHECK(garbled("AllReduce: 64 Bytes -> Algo RING proto LL channel{Lo..Hi}={5..2}").find("channel range") !=
        std::string::npos);
  CHECK(garbled("AllReduce: 64 Bytes -> Algo RING").find("expected 'Algo A proto P'") != std::string::npos);
  CHECK(garbled("AllReduce 64 Bytes -> Algo RING proto LL").find("expected 'Function:") != std::string::npos);
  CHECK(garbled("All-Reduce: 64 Bytes -> Algo RING proto LL").find("function names") != std::string::npos);
  CHECK(garbled("AllReduce [Fast]: 64 Bytes -> Kernel X").find("kernel family") != std::string::npos);
  CHECK(garbled("AllReduce: 64 Bytes -> Algo 1 proto 2 time").find("'time'") != std::string::npos);
  CHECK(garbled(" Bytes -> Algo 1 proto 2").find("byte count") != std::string::npos);
  for (const char* other :
       {"Channel 00/0 : 0[0] -> 1[1] via P2P/IPC", "16 coll channels, 16 nvls channels",
        "comm 0x5 rank 0 nranks 24 cudaDev 0 nvmlDev 0 busId a4000 - Init COMPLETE",
        "AllReduce: opCount 0 sendbuff 0x7f recvbuff 0x7f count 1 datatype 7 op 0 root 0"})
    CHECK_FALSE(parse_tuning_message(other).is_tuning);
  CHECK_FALSE(nccl_info_message("h:1:2 [0] transport.cc:12 NCCL WARN Bytes -> x"));
}

TEST_CASE("init lines give the channel counts, transport lines do not", "[readers][nccl_info]") {
  auto c = parse_channel_message(
      "16 coll channels, 16 collnet channels, 16 nvls channels, 16 p2p channels, "
      "2 p2p channels per peer");  // 2.24 on
  REQUIRE(c);
  CHECK_FALSE(c->ring);
  CHECK(c->coll == 16);
  CHECK(c->nvls == 16);
  c = parse_channel_message("4 coll channels, 4 p2p channels, 2 p2p channels per peer");  // 2.7 - 2.17
  REQUIRE(c);
  CHECK(c->coll == 4);
  CHECK(c->nvls == -1);
  c = parse_channel_message("Channel 05/16 :    0   7   6  13  12  11  10   9   8  15");
  REQUIRE(c);
  CHECK(c->ring);
  CHECK(c->coll == 16);
  c = parse_channel_message("Channel 03 :    0   1   2   3");  // NCCL 2.4
  REQUIRE(c);
  CHECK(c->ring_index == 3);
  CHECK(c->coll == 0);
  for (const char* other : {"Channel 00/0 : 16[0] -> 0[0] [receive] via NET/IBext_v8/7/GDRDMA",
                            "Channel 00 : 0[1c000] -> 1[1d000] via P2P/IPC", "Channel 16/16 :    0   1",
                            "coll channels", "x coll channels, 4 p2p channels", "Channel 00/02 :"})
    CHECK_FALSE(parse_channel_message(other));
}
