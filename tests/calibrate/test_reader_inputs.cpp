// The inputs people have: Slurm-labelled logs, rows cut by NCCL's per-call lines, tables with only
// their in-place columns, logs that do not name their collective or shape (--collective, --shape),
// and NCCL's tuning and init lines matched to the rows.
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <sstream>

#include "calibration_fixture.hpp"
#include "sim/calibrate/measurement.hpp"
#include "sim/core/error.hpp"
#include "support/cli.hpp"

using namespace aggsim;
namespace fs = std::filesystem;

namespace {

const fs::path kData = fs::path(AGGSIM_SOURCE_DIR) / "tests" / "data" / "calibration";

std::string data(const std::string& file) {
  return aggsim::test::read_file(kData / file);
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::vector<std::string> words_of(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

std::string joined(const std::vector<std::string>& lines) {
  std::string text;
  for (const auto& l : lines) text += l + "\n";
  return text;
}

}  // namespace

TEST_CASE("srun -l labels: the shipped Slurm logs read with the ranks and nodes of their rank lines",
          "[readers][prefix]") {
  // Shapes from tests/data/README.md: Alps jobs of 4 GH200 per node, one rank each; the q2ndr
  // nodes have 8 H100. The Alps logs label every line "0: ", the 2-node q2ndr ones " 0: ".
  struct Case {
    const char* file;
    std::size_t rows;
    int ranks, nodes;
    std::uint64_t bytes;
    double time_us;  // of that size, out-of-place
  };
  for (const Case& c : {Case{"alps_gh200_1node_all_reduce.log", 30, 4, 1, 8, 0},
                        Case{"alps_gh200_2node_all_reduce.log", 30, 8, 2, 2097152, 129.3},
                        Case{"alps_gh200_4node_all_reduce.log", 30, 16, 4, 8, 0},
                        Case{"alps_gh200_8node_all_reduce.log", 30, 32, 8, 8, 0},
                        Case{"h100_q2ndr_1node_all_reduce.log", 6, 8, 1, 134217728, 613.3},
                        Case{"h100_q2ndr_2node_all_reduce.log", 11, 16, 2, 8388608, 215.3},
                        Case{"h100_q2ndr_ring_2node_all_reduce.log", 11, 16, 2, 8, 0}}) {
    INFO(c.file);
    const auto f = read_measurement_file((kData / c.file).string(), {});
    CHECK(f.rows.size() == c.rows);
    CHECK(f.skipped.empty());
    for (const auto& row : f.rows) {
      CHECK(row.collective == "all_reduce");
      CHECK(row.ranks == c.ranks);
      CHECK(row.nodes == c.nodes);
      CHECK_FALSE(row.in_place);
    }
    if (c.time_us > 0) {
      bool found = false;
      for (const auto& row : f.rows)
        if (row.bytes == c.bytes) {
          found = true;
          CHECK(row.time_s == Approx(c.time_us * 1e-6));
        }
      CHECK(found);
    }
  }
  // The label's width follows the task count: "  0: " for 100 tasks and more.
  std::string wide;
  for (const auto& l : lines_of(data("h100_q2ndr_2node_all_reduce.log")))
    wide += (l.rfind(" 0:", 0) == 0 ? "  0:" + l.substr(3) : l) + "\n";
  CHECK(parse_measurements(wide, "all_reduce.log", {}).rows.size() == 11);
  // Labels of other tasks on lines between the rows do not cut the table.
  const auto alps = lines_of(data("alps_gh200_2node_all_reduce.log"));
  std::vector<std::string> with_others;
  for (const auto& l : alps) {
    with_others.push_back(l);
    if (l.find("     float     sum") != std::string::npos) with_others.push_back("4: ");
  }
  CHECK(parse_measurements(joined(with_others), "all_reduce.log", {}).rows.size() == 30);
}

TEST_CASE("rows cut by NCCL's per-call lines are read whole, as in the NVIDIA/nccl#1453 log",
          "[readers][glued]") {
  // nccl-tests prints a row's first columns, NCCL prints one tuning line per call, nccl-tests
  // prints the out-of-place columns, and so on; mpirun's "[0] " tag lands where NCCL's line begins
  // (the posted log: "[0]          512           128     float     sum      -1[0] h100clust-...").
  const std::string host = "h100clust-worker-1:497888:497888 [0] NCCL INFO ";
  const auto info = [&](const std::string& what) { return "[0] " + host + what + "\n"; };
  std::string log =
      "# Collective test starting: all_reduce_perf\n#  Rank  0 Group  0 Pid 1 on nodeA device  0 "
      "[0x1] GPU\n#  Rank  1 Group  0 Pid 2 on nodeB device  0 [0x1] GPU\n";
  for (const auto& l : lines_of(aggsim::test::kNcclTestsHeader)) log += "[0] " + l + "\n";
  log += info("1048576 Bytes -> Algo 1 proto 2 time 86.0");  // warm-up of the largest size
  // 512 B: tree/LL in every call.
  log += "[0]          512           128     float     sum      -1[0] " + host +
         "512 Bytes -> Algo 0 proto 0 time 25.25\n";
  for (int i = 0; i < 3; ++i) log += info("512 Bytes -> Algo 0 proto 0 time 25.25");
  log += "[0]     62.05    0.01    0.01      0[0] " + host + "512 Bytes -> Algo 0 proto 0 time 25.25\n";
  for (int i = 0; i < 3; ++i) log += info("512 Bytes -> Algo 0 proto 0 time 25.25");
  log += "[0]     61.00    0.01    0.01      0\n";
  // 1 MiB, without launcher tags: the host glued to the text it follows; NCCL chose ring/Simple
  // in 5 calls and tree/LL128 in 2 (a warning), and one tuning line is garbled.
  log += "     1048576        262144     float     sum      -1" + host +
         "1048576 Bytes -> Algo 1 proto 2 time 86.0\n";
  for (int i = 0; i < 3; ++i) log += host + "1048576 Bytes -> Algo 1 proto 2 time 86.0\n";
  log += "   100.0   10.49   10.49      0" + host + "1048576 Bytes -> Algo 0 proto 1 time 90.0\n";
  log += host + "1048576 Bytes -> Algo 0 proto 1 time 90.0\n";
  log += host + "1048576 Bytes -> Algo 9 proto 1 time 90.0\n";
  log += "\n" + std::string("h100clust-worker-1:497888:497999 [0] misc/socket.cc:50 NCCL WARN a warning\n");
  log += "    99.00   10.59   10.59      0\n";
  log += "# Out of bounds values : 0 OK\n";
  const auto f = parse_measurements(log, "log.txt", {});
  REQUIRE(f.rows.size() == 2);
  CHECK(f.rows[0].bytes == 512);
  CHECK(f.rows[0].time_s == Approx(62.05e-6));
  CHECK(f.rows[0].source == "log.txt:8");
  CHECK(f.rows[0].ranks == 2);
  CHECK(f.rows[0].nodes == 2);
  CHECK(f.rows[0].observed.nccl_algorithm == "tree");
  CHECK(f.rows[0].observed.protocol == "ll");
  CHECK(f.rows[0].observed_source == "log.txt:8");
  CHECK(f.rows[1].bytes == 1048576);
  CHECK(f.rows[1].time_s == Approx(100e-6));
  CHECK(f.rows[1].source == "log.txt:17");
  CHECK(f.rows[1].observed.nccl_algorithm == "ring");  // 5 calls with the warm-up, against 2
  CHECK(f.rows[1].observed.protocol == "simple");
  CHECK(f.rows[1].observed_source == "log.txt:7");
  REQUIRE(f.skipped.size() == 1);
  CHECK(f.skipped[0].where == "log.txt:23");
  CHECK(f.skipped[0].why.find("'9' is not one of NCCL's algorithms") != std::string::npos);
  REQUIRE(f.warnings.size() == 1);
  CHECK(f.warnings[0].where == "log.txt:17");
  CHECK(f.warnings[0].why.find("ring/simple in 5 calls") != std::string::npos);
  CHECK(f.warnings[0].why.find("tree/ll128 in 2 (first at log.txt:21)") != std::string::npos);
}

TEST_CASE("tuning lines match their rows by collective, size and run", "[readers][tuning]") {
  // NCCL >= 2.24 prints an all-gather's size per rank (its count argument), 2.23 the whole buffer.
  const std::string head =
      "# Collective test starting: all_gather_perf\n#  Rank  0 Group  0 Pid 1 on a device  0 "
      "[0x1] GPU\n#  Rank  1 Group  0 Pid 2 on a device  1 [0x1] GPU\n" +
      std::string(aggsim::test::kNcclTestsHeader);
  const std::string row =
      "     1048576        131072     float    none      -1    100.0   10.49    5.24      0    "
      "99.00   10.59    5.30      0\n";
  auto f = parse_measurements(
      head + "a:1:1 [0] NCCL INFO AllGather: 524288 Bytes -> Algo RING proto LL128 channel{Lo..Hi}={0..7}\n" +
          row,
      "ag.log", {});
  REQUIRE(f.rows.size() == 1);
  CHECK(f.rows[0].observed.nccl_algorithm == "ring");
  CHECK(f.rows[0].observed.protocol == "ll128");
  CHECK(f.rows[0].observed.channels == 8);
  f = parse_measurements(
      head + "a:1:1 [0] NCCL INFO AllGather: 1048576 Bytes -> Algo 6 proto 2 time 50.0\n" + row, "ag.log",
      {});
  CHECK(f.rows[0].observed.nccl_algorithm == "pat");
  // Another collective's lines, or another size's, are not this row's.
  f = parse_measurements(
      head + "a:1:1 [0] NCCL INFO AllReduce: 1048576 Bytes -> Algo RING proto LL channel{Lo..Hi}={0..1}\n" +
          "a:1:1 [0] NCCL INFO AllGather: 1048576 Bytes -> Algo RING proto LL channel{Lo..Hi}={0..1}\n" + row,
      "ag.log", {});
  CHECK(f.rows[0].observed.nccl_algorithm.empty());
  CHECK(f.rows[0].observed_source.empty());
  // A second run in the same file (its own "Using devices") keeps its own lines.
  const std::string run2 =
      "# Using devices\n#  Rank  0 Group  0 Pid 1 on a device  0 [0x1] GPU\n#  Rank  1 Group  0 "
      "Pid 2 on a device  1 [0x1] GPU\n" +
      std::string(aggsim::test::kNcclTestsHeader);
  f = parse_measurements(
      head + "a:1:1 [0] NCCL INFO AllGather: 524288 Bytes -> Algo RING proto LL channel{Lo..Hi}={0..1}\n" +
          row + run2 +
          "a:1:1 [0] NCCL INFO AllGather: 524288 Bytes -> Algo RING proto SIMPLE channel{Lo..Hi}={0..3}\n" +
          row,
      "ag.log", {});
  REQUIRE(f.rows.size() == 2);
  CHECK(f.rows[0].observed.protocol == "ll");
  CHECK(f.rows[1].observed.protocol == "simple");
  CHECK(f.warnings.empty());
  // The shipped NCCL 2.16 logs give their channel count; NCCL 2.4's rings lines count rings.
  const auto a100 = read_measurement_file((kData / "a100_ib_1node_all_reduce.log").string(), {});
  CHECK(a100.observed_channels == 4);
  CHECK(a100.rows[0].observed.nccl_algorithm.empty());  // no tuning lines in that log
  const auto eth = read_measurement_file((kData / "eth10g_16host_all_reduce.log").string(), {});
  CHECK(eth.observed_channels == 1);  // only "Channel 00 :" and "Ring 00" lines
  CHECK(read_measurement_file((kData / "h100_q2ndr_2node_all_reduce.log").string(), {}).observed_channels ==
        0);
}

TEST_CASE("in-place columns when the out-of-place ones are missing, on the q2ndr 1-node table",
          "[readers][in_place]") {
  const auto lines = lines_of(data("h100_q2ndr_1node_all_reduce.log"));
  // The table's own in-place times (column 10 of each row), to compare with.
  std::vector<double> in_place_us;
  for (const auto& l : lines) {
    const auto w = words_of(l);
    if (w.size() == 13 && w[2] == "float") in_place_us.push_back(std::stod(w[9]));
  }
  REQUIRE(in_place_us.size() == 6);
  const auto check_in_place = [&](const MeasurementFile& f) {
    REQUIRE(f.rows.size() == 6);
    CHECK(f.skipped.empty());
    for (std::size_t i = 0; i < 6; ++i) {
      CHECK(f.rows[i].in_place);
      CHECK(f.rows[i].time_s == Approx(in_place_us[i] * 1e-6));
    }
  };
  // Out-of-place cells blanked with "-" or "N/A" (in the same table).
  for (const std::string blank : {"-", "N/A"}) {
    std::vector<std::string> edited;
    for (const auto& l : lines) {
      auto w = words_of(l);
      if (w.size() == 13 && w[2] == "float") {
        w[5] = w[6] = w[7] = blank;
        std::string row;
        for (const auto& x : w) row += "  " + x;
        edited.push_back(row);
      } else {
        edited.push_back(l);
      }
    }
    check_in_place(parse_measurements(joined(edited), "all_reduce.log", {}));
  }
  // Only the in-place group kept, under a label that names it.
  std::vector<std::string> trimmed;
  for (const auto& l : lines) {
    auto w = words_of(l);
    if (l.find("out-of-place") != std::string::npos) {
      trimmed.push_back("#                                                           in-place");
    } else if (w.size() >= 9 && (w[1] == "size" || w[1] == "(B)")) {
      trimmed.push_back(
          w[1] == "size"
              ? "#       size         count      type   redop    root     time   algbw   busbw #wrong"
              : "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)");
    } else if (w.size() == 13 && w[2] == "float") {
      std::string row;
      for (std::size_t k : {0, 1, 2, 3, 4, 9, 10, 11, 12}) row += "  " + w[k];
      trimmed.push_back(row);
    } else {
      trimmed.push_back(l);
    }
  }
  check_in_place(parse_measurements(joined(trimmed), "all_reduce.log", {}));
  // The original: out-of-place.
  const auto f = parse_measurements(joined(lines), "all_reduce.log", {});
  CHECK_FALSE(f.rows[0].in_place);
  CHECK(f.rows[0].time_s == Approx(613.3e-6));
}

TEST_CASE("option --collective names a log's collective, and a log that names another is an input error",
          "[readers][collective]") {
  const std::string table =
      std::string(aggsim::test::kNcclTestsHeader) +
      "     1048576        262144     float     sum      -1    100.0   10.49   10.49      0    "
      "99.00   10.59   10.59      0\n";
  MeasurementDefaults d;
  d.ranks = 2;
  d.nodes = 2;
  CHECK_THROWS_WITH(parse_measurements(table, "posted.txt", d), Catch::Contains("give --collective"));
  d.collective = "reduce_scatter";
  CHECK(parse_measurements(table, "posted.txt", d).rows[0].collective == "reduce_scatter");
  // A file name that tells wins (the option is for the logs that do not say).
  CHECK(parse_measurements(table, "runs/all_gather_perf.txt", d).rows[0].collective == "all_gather");
  // The log's own line must agree.
  const std::string named =
      "# nccl-tests version 2.17.1\n# Collective test starting: all_reduce_perf\n" + table;
  CHECK_THROWS_WITH(parse_measurements(named, "posted.txt", d),
                    Catch::Contains("posted.txt:2: this log names its collective, 'all_reduce_perf', but "
                                    "--collective says reduce_scatter"));
  d.collective = "all_reduce";
  CHECK(parse_measurements(named, "posted.txt", d).rows[0].collective == "all_reduce");
  d.collective.clear();
  CHECK_THROWS_WITH(parse_measurements("# Collective test starting: alltoall_perf\n" + table, "x.txt", d),
                    Catch::Contains("x.txt:5: x.txt:1 names 'alltoall_perf', not a collective aggsim reads"));
}

TEST_CASE("option --shape gives one file its ranks and nodes, and its own rank lines must agree",
          "[readers][shape]") {
  const auto lines = lines_of(data("h100_q2ndr_2node_all_reduce.log"));
  std::vector<std::string> trimmed;  // the rank lines cut, as in many posted tables
  for (const auto& l : lines)
    if (l.find("Rank ") == std::string::npos) trimmed.push_back(l);
  MeasurementDefaults d;
  CHECK_THROWS_WITH(parse_measurements(joined(trimmed), "all_reduce.log", d), Catch::Contains("--shape"));
  d.ranks = 16;
  d.nodes = 2;
  d.shape_option = "--shape all_reduce.log=16x2";
  auto f = parse_measurements(joined(trimmed), "all_reduce.log", d);
  CHECK(f.rows[0].ranks == 16);
  CHECK(f.rows[0].nodes == 2);
  f = parse_measurements(joined(lines), "all_reduce.log", d);  // the rank lines agree
  CHECK(f.rows.size() == 11);
  d.ranks = 8;
  d.nodes = 1;
  d.shape_option = "--shape all_reduce.log=8x1";
  CHECK_THROWS_WITH(parse_measurements(joined(lines), "all_reduce.log", d),
                    Catch::Contains("all_reduce.log:4: these 'Rank N ... on HOST' lines give 16 ranks on 2 "
                                    "nodes, but --shape all_reduce.log=8x1 says 8 on 1"));
  // CSV rows say their own shape; OSU's point-to-point tests run 2 ranks.
  CHECK_THROWS_WITH(
      parse_measurements("collective,ranks,nodes,bytes,time\nall_reduce,16,2,1024,1e-5\n", "m.csv", d),
      Catch::Contains("m.csv:2: this row is 16 ranks on 2 nodes, but --shape"));
  CHECK_THROWS_WITH(
      parse_measurements("# OSU MPI Latency Test v7.1\n# Size Latency (us)\n8 1.5\n", "osu.txt", d),
      Catch::Contains("osu.txt:3: a point-to-point OSU test runs 2 ranks"));
}

// Posted device lists are often shortened with a line of dots (the first and last ranks shown):
// the lines kept do not give the run's shape, so --shape must, and must cover them.
TEST_CASE("a device list abbreviated with '...' needs --shape, which must cover its rank lines",
          "[readers][shape]") {
  // --shape FILE=RANKSxNODES as the command line gives it.
  const auto shaped = [](const std::string& file, int ranks, int nodes) {
    MeasurementDefaults d;
    d.ranks = ranks;
    d.nodes = nodes;
    d.shape_option = fmt::format("--shape {}={}x{}", file, ranks, nodes);
    return d;
  };
  const std::string log = data("oci_gb300_32tray_all_reduce.log");  // ranks 0, 1, "...", 126, 127
  const MeasurementDefaults none;
  CHECK_THROWS_WITH(parse_measurements(log, "tray.log", none),
                    Catch::Contains("tray.log:7: this device list is abbreviated ('...')") &&
                        Catch::Contains("give --shape"));
  const auto f = parse_measurements(log, "tray.log", shaped("tray.log", 128, 32));
  REQUIRE(f.rows.size() == 16);
  CHECK(f.rows[0].ranks == 128);
  CHECK(f.rows[0].nodes == 32);
  // Fewer ranks than the highest shown (127) or fewer nodes than the two hosts shown.
  CHECK_THROWS_WITH(parse_measurements(log, "tray.log", shaped("tray.log", 100, 32)),
                    Catch::Contains("tray.log:5: these abbreviated 'Rank N ... on HOST' lines give at least "
                                    "128 ranks on 2 nodes, but --shape tray.log=100x32 says 100 on 32"));
  CHECK_THROWS_WITH(parse_measurements(log, "tray.log", shaped("tray.log", 128, 1)),
                    Catch::Contains("says 128 on 1"));
  // Without the dots the same four lines are a whole list: 4 ranks on 2 hosts.
  std::string whole = log;
  whole.erase(whole.find("...\n"), 4);
  const auto g = parse_measurements(whole, "tray.log", none);
  CHECK(g.rows[0].ranks == 4);
  CHECK(g.rows[0].nodes == 2);
  // "#  ..." and rank lines the reader does not take (no "on HOST"), as an edited post has them.
  const std::string edited = data("gcp_a4_b200_2node_all_reduce.log");
  CHECK_THROWS_WITH(parse_measurements(edited, "a4_all_reduce.log", none),
                    Catch::Contains("a4_all_reduce.log:6: this device list is abbreviated"));
  const auto e = parse_measurements(edited, "a4_all_reduce.log", shaped("a4_all_reduce.log", 16, 2));
  REQUIRE(e.rows.size() == 12);
  CHECK(e.rows[0].ranks == 16);
  CHECK(e.rows[0].time_s == Approx(158.8e-6));  // the one time column the post kept
}
