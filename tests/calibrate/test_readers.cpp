// Measurement readers: nccl-tests column variants, launcher prefixes, rank/host headers, OSU, CSV,
// and what happens to malformed and truncated logs.
#include <catch2/catch.hpp>

#include "sim/calibrate/measurement.hpp"
#include "sim/core/error.hpp"

using namespace aggsim;

namespace {

// --ranks and --nodes as the command line gives them.
MeasurementDefaults shape(int ranks, int nodes) {
  MeasurementDefaults d;
  d.ranks = ranks;
  d.nodes = nodes;
  return d;
}

// nccl-tests >= 2.13: `root` and `#wrong` columns, "Group" in the rank lines; 2 hosts x 2 GPUs.
const char* kNewFormat = R"(# nccl-tests version 2.18.0 nccl-headers=22907 nccl-library=22907
# Collective test starting: all_gather_perf
# nThread 1 nGpus 1 minBytes 8 maxBytes 1048576 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
#
# Using devices
#  Rank  0 Group  0 Pid   6899 on nodeA device  0 [0000:04:00] NVIDIA H100 80GB HBM3
#  Rank  1 Group  0 Pid   6900 on nodeA device  1 [0000:05:00] NVIDIA H100 80GB HBM3
#  Rank  2 Group  0 Pid   6733 on nodeB device  0 [0000:04:00] NVIDIA H100 80GB HBM3
#  Rank  3 Group  0 Pid   6734 on nodeB device  1 [0000:05:00] NVIDIA H100 80GB HBM3
#
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
nodeA:1:2 [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] [receive] via NET/IB/1
        1024            64     float    none      -1    20.00    0.05    0.04      0    19.00    0.05    0.04      0
     1048576         65536     float    none      -1    100.0   10.49    7.86      0    99.00   10.59    7.94      0
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 3.9
)";

// nccl-tests 2.0-era: no root, an `error` column, a `-g 8` single-process run.
const char* kOldFormat =
    R"( nThread 1 nGpus 8 minBytes 8 maxBytes 16 step: 2(factor) warmup iters: 5 iters: 20 validation: 1

 Using devices
   Rank  0 Pid  23638 on ip-10-0-26-117 device  0 [0x00] Tesla V100-SXM2-32GB
   Rank  1 Pid  23638 on ip-10-0-26-117 device  1 [0x00] Tesla V100-SXM2-32GB
   Rank  2 Pid  23638 on ip-10-0-26-117 device  2 [0x00] Tesla V100-SXM2-32GB
   Rank  3 Pid  23638 on ip-10-0-26-117 device  3 [0x00] Tesla V100-SXM2-32GB
   Rank  4 Pid  23638 on ip-10-0-26-117 device  4 [0x00] Tesla V100-SXM2-32GB
   Rank  5 Pid  23638 on ip-10-0-26-117 device  5 [0x00] Tesla V100-SXM2-32GB
   Rank  6 Pid  23638 on ip-10-0-26-117 device  6 [0x00] Tesla V100-SXM2-32GB
   Rank  7 Pid  23638 on ip-10-0-26-117 device  7 [0x00] Tesla V100-SXM2-32GB

                                                     out-of-place                       in-place
       size         count    type   redop     time   algbw   busbw  error     time   algbw   busbw  error
        (B)    (elements)                     (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
           8             2   float     sum    59.98    0.00    0.00  2e-07    56.81    0.00    0.00  1e-07
          16             4   float     sum    60.10    0.00    0.00  2e-07    56.90    0.00    0.00  1e-07
)";

}  // namespace

TEST_CASE("nccl-tests: root/#wrong columns, Group in rank lines, hosts counted as nodes", "[readers]") {
  const auto f = parse_measurements(kNewFormat, "log.txt", {});
  REQUIRE(f.rows.size() == 2);
  CHECK(f.skipped.empty());
  CHECK(f.rows[0].collective == "all_gather");  // from "Collective test starting", not the file name
  CHECK(f.rows[0].ranks == 4);
  CHECK(f.rows[0].nodes == 2);
  CHECK(f.rows[1].bytes == 1048576);
  CHECK(f.rows[1].time_s == Approx(100e-6));  // out-of-place, not in-place
  CHECK(f.rows[1].source == "log.txt:16");
}

TEST_CASE("nccl-tests: 0-byte rows (all_gather below one element per rank) time nothing and are left out",
          "[readers]") {
  std::string text = kNewFormat;
  const std::string first_row = "        1024            64";
  text.insert(text.find(first_row),
              "           0             0     float    none      -1     0.25    0.00    0.00      0     0.23 "
              "   0.00    0.00      0\n");
  const auto f = parse_measurements(text, "log.txt", {});
  REQUIRE(f.rows.size() == 2);
  CHECK(f.skipped.empty());
  CHECK(f.rows[0].bytes == 1024);
  CHECK(f.rows[0].source == "log.txt:16");
}

TEST_CASE("nccl-tests: old columns (error, no root) and a -g 8 run in one process", "[readers]") {
  const auto f = parse_measurements(kOldFormat, "runs/all_reduce_perf_g8.txt", {});
  REQUIRE(f.rows.size() == 2);
  CHECK(f.rows[0].collective == "all_reduce");  // from the file name
  CHECK(f.rows[0].ranks == 8);
  CHECK(f.rows[0].nodes == 1);
  CHECK(f.rows[0].time_s == Approx(59.98e-6));
}

TEST_CASE("nccl-tests: mpirun prefixes are removed", "[readers]") {
  std::string tagged, plain;
  std::string text = kNewFormat;
  for (std::size_t at = 0, next; at < text.size(); at = next + 1) {
    next = text.find('\n', at);
    if (next == std::string::npos) next = text.size();
    tagged += "[1,0]<stdout>:" + text.substr(at, next - at) + "\n";
    plain += "[0] " + text.substr(at, next - at) + "\n";
  }
  for (const auto& t : {tagged, plain}) {
    const auto f = parse_measurements(t, "log.txt", {});
    REQUIRE(f.rows.size() == 2);
    CHECK(f.rows[0].ranks == 4);
    CHECK(f.rows[0].nodes == 2);
  }
}

TEST_CASE("nccl-tests: a truncated or mangled row is reported with file:line and skipped",
          "[readers][malformed]") {
  std::string text = kOldFormat;
  // Truncated mid-row (as a log cut by a killed job), then a row whose time lost a digit.
  text += "          32             8   float     sum    60.\n";
  text +=
      "     1048576        262144   float     sum    13.3    7.88    13.79  2e-07    13.30    7.88   13.79  "
      "1e-07\n";
  const auto f = parse_measurements(text, "all_reduce_cut.txt", {});
  CHECK(f.rows.size() == 2);
  REQUIRE(f.skipped.size() == 2);
  CHECK(f.skipped[0].where == "all_reduce_cut.txt:18");
  CHECK(f.skipped[0].why.find("expected 12 columns") != std::string::npos);
  CHECK(f.skipped[1].where == "all_reduce_cut.txt:19");
  CHECK(f.skipped[1].why.find("algbw") != std::string::npos);
}

TEST_CASE("a log without any measurement is an input error naming the file", "[readers][malformed]") {
  CHECK_THROWS_WITH(parse_measurements("hello\nworld\n", "empty.txt", {}),
                    Catch::Contains("empty.txt:1: no measurement"));
  // Only the header survived (the job died before the first row).
  const std::string head = std::string(kOldFormat).substr(0, std::string(kOldFormat).find("           8 "));
  CHECK_THROWS_WITH(parse_measurements(head, "all_reduce_perf.txt", {}), Catch::Contains("no measurement"));
  // Every row unreadable: the message shows the first one.
  CHECK_THROWS_WITH(parse_measurements(head + "  8  2  float  sum  x  0.00  0.00  2e-07  1  0  0  1e-07\n",
                                       "all_reduce_perf.txt", {}),
                    Catch::Contains("all_reduce_perf.txt:16"));
}

TEST_CASE("nccl-tests: an unnamed collective or an unknown rank count is an input error",
          "[readers][malformed]") {
  const std::string old = kOldFormat;
  CHECK_THROWS_WITH(parse_measurements(old, "results.txt", {}),
                    Catch::Contains("cannot tell which collective"));
  const std::string no_ranks =
      old.substr(old.find("                                                     out-of-place"));
  CHECK_THROWS_WITH(parse_measurements(no_ranks, "sendrecv.txt", {}), Catch::Contains("--ranks"));
  const auto f = parse_measurements(no_ranks, "sendrecv.txt", shape(4, 2));
  CHECK(f.rows[0].ranks == 4);
  CHECK(f.rows[0].nodes == 2);
}

TEST_CASE("OSU latency, bandwidth and allreduce", "[readers][osu]") {
  const auto lat = parse_measurements(
      "# OSU MPI-CUDA Latency Test v7.2\n# Send Buffer on DEVICE (D) and Receive Buffer on DEVICE (D)\n"
      "# Size          Latency (us)\n0                       1.90\n1                       1.95\n"
      "1024                    2.50\n",
      "lat.txt", {});
  REQUIRE(lat.rows.size() == 2);  // the 0-byte row has no time per byte to fit
  CHECK(lat.rows[1].collective == "sendrecv");
  CHECK(lat.rows[1].ranks == 2);
  CHECK(lat.rows[1].nodes == 2);
  CHECK(lat.rows[1].time_s == Approx(2.5e-6));
  const auto bw = parse_measurements(
      "# OSU MPI Bandwidth Test v5.6.2\n# Size      Bandwidth (MB/s)\n1048576   10000.00\n", "bw.txt",
      shape(0, 1));
  REQUIRE(bw.rows.size() == 1);
  CHECK(bw.rows[0].nodes == 1);
  CHECK(bw.rows[0].time_s == Approx(1048576 / 1e10));
  const std::string ar =
      "# OSU MPI Allreduce Latency Test v5.6.2\n# Size       Avg Latency(us)\n4                       "
      "5.12\n8    5.20\n";
  CHECK_THROWS_WITH(parse_measurements(ar, "ar.txt", {}), Catch::Contains("--ranks"));
  const auto f = parse_measurements(ar, "ar.txt", shape(16, 2));
  REQUIRE(f.rows.size() == 2);
  CHECK(f.rows[1].collective == "all_reduce");
  CHECK(f.rows[1].ranks == 16);
  CHECK(f.rows[1].nodes == 2);
  CHECK(f.rows[1].time_s == Approx(5.2e-6));
}

TEST_CASE("plain CSV, with a bad row reported", "[readers][csv]") {
  const auto f = parse_measurements(
      "collective,ranks,nodes,bytes,time\nall_reduce,8,1,1048576,0.0001\n"
      "# comment\nallgather,16,2,4096,2e-5\nall_reduce,8,1,1024\nall_reduce,8,9,1024,1\n",
      "m.csv", {});
  REQUIRE(f.rows.size() == 2);
  CHECK(f.rows[1].collective == "all_gather");
  CHECK(f.rows[1].ranks == 16);
  CHECK(f.rows[1].time_s == Approx(2e-5));
  REQUIRE(f.skipped.size() == 2);
  CHECK(f.skipped[0].where == "m.csv:5");
  CHECK(f.skipped[1].where == "m.csv:6");  // more nodes than ranks
  CHECK_THROWS_WITH(parse_measurements("collective,ranks,bytes,time\nall_reduce,8,1,1\n", "m.csv", {}),
                    Catch::Contains("m.csv:1: CSV header lacks column 'nodes'"));
}

TEST_CASE("hostile logs: long lines, huge numbers and rank lines are bounded and located",
          "[readers][hostile]") {
  const std::string text = kNewFormat;
  const auto line = [&](int n) {  // line n (from 1) of kNewFormat
    std::size_t at = 0;
    for (int i = 1; i < n; ++i) at = text.find('\n', at) + 1;
    return text.substr(at, text.find('\n', at) - at);
  };
  const auto replace_line = [&](int n, const std::string& with) {
    std::size_t at = 0;
    for (int i = 1; i < n; ++i) at = text.find('\n', at) + 1;
    return text.substr(0, at) + with + text.substr(text.find('\n', at));
  };
  // A launcher prefix of 600 KB on every rank line: std::regex recursed once per character of it and
  // overflowed the stack (SIGSEGV); the prefix is removed and the log read as without it.
  std::string prefix = "[";
  for (int i = 0; i < 300000; ++i) prefix += "1,";
  prefix += "0]<stdout>: ";
  std::string prefixed = text;
  for (int n : {9, 8, 7, 6}) {
    std::size_t at = 0;
    for (int i = 1; i < n; ++i) at = prefixed.find('\n', at) + 1;
    prefixed.insert(at, prefix);
  }
  const auto f = parse_measurements(prefixed, "log.txt", {});
  REQUIRE(f.rows.size() == 2);
  CHECK(f.rows[0].ranks == 4);
  // A rank number of a million digits, or one beyond an int: a located input error (was "stoi").
  for (const std::string& rank : {std::string(1000000, '9'), std::string("99999999999")}) {
    const std::string rank_line =
        "#  Rank " + rank + " Group  0 Pid   6899 on nodeA device  0 [0000:04:00] GPU";
    CHECK_THROWS_WITH(
        parse_measurements(replace_line(6, rank_line), "log.txt", {}),
        Catch::Contains("log.txt:6: the rank number of this 'Rank N ... on HOST' line is beyond 4194304"));
  }
  // A host name of 3 MB: the line is refused by its length, before any reader holds it.
  const std::string long_host =
      "#  Rank  0 Group  0 Pid   6899 on " + std::string(3 << 20, 'h') + " device  0";
  CHECK_THROWS_WITH(parse_measurements(replace_line(6, long_host), "log.txt", {}),
                    Catch::Contains("log.txt:6: the line is longer than 1048576 bytes"));
  CHECK(line(6).find("Rank  0") != std::string::npos);  // the line replaced above is a rank line
  // Sizes and counts beyond what a double converts to an integer: skipped with their reason.
  const auto csv = parse_measurements(
      "collective,ranks,nodes,bytes,time\nall_reduce,8,1,1e30,1\nall_reduce,1e300,1,1024,1\n"
      "all_reduce,8,1,1024,1e-5\n",
      "m.csv", {});
  CHECK(csv.rows.size() == 1);
  REQUIRE(csv.skipped.size() == 2);
  CHECK(csv.skipped[0].why.find("below 2^63") != std::string::npos);
  CHECK(csv.skipped[1].why.find("4194304") != std::string::npos);
  const auto osu = parse_measurements("# OSU MPI Latency Test v7.1\n# Size Latency (us)\n1e300 2.5\n8 1.5\n",
                                      "osu.txt", {});
  CHECK(osu.rows.size() == 1);
  REQUIRE(osu.skipped.size() == 1);
  CHECK(osu.skipped[0].where == "osu.txt:3");
  const std::string nccl_row = "  1e30  1  float  none  -1  20.00  0.05  0.04  0  19.00  0.05  0.04  0";
  const auto nccl = parse_measurements(text + nccl_row + "\n", "log.txt", {});
  CHECK(nccl.rows.size() == 2);
  REQUIRE(!nccl.skipped.empty());
  CHECK(nccl.skipped.back().why.find("2^63") != std::string::npos);
}

TEST_CASE("bus bandwidth factors are nccl-tests' own", "[readers]") {
  CHECK(bus_bandwidth_factor("all_reduce", 8) == Approx(1.75));
  CHECK(bus_bandwidth_factor("all_gather", 8) == Approx(0.875));
  CHECK(bus_bandwidth_factor("reduce_scatter", 4) == Approx(0.75));
  CHECK(bus_bandwidth_factor("sendrecv", 4) == 1);
}
