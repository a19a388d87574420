// --collective and --shape on the command line of calibrate and compare, and logs whose NCCL
// tuning lines contradict the algorithm or protocol the scenario forces.
#include <fmt/format.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <sstream>

#include "calibration_fixture.hpp"
#include "sim/calibrate/calibrate.hpp"
#include "sim/core/error.hpp"
#include "sim/scenario/scenario_loader.hpp"
#include "support/cli.hpp"

using namespace aggsim;
using namespace aggsim::test;
namespace fs = std::filesystem;

namespace {

// A posted all_reduce table: no "Collective test starting" line, no rank lines; `us` per size.
std::string posted_table(double us_1mib, double us_4mib) {
  const auto row = [](long bytes, double us) {
    const double algbw = static_cast<double>(bytes) / (us * 1e3);
    return fmt::format(
        "{:>12} {:>13}     float     sum      -1  {:7.1f}  {:6.2f}  {:6.2f}      0  {:7.1f}  "
        "{:6.2f}  {:6.2f}      0\n",
        bytes, bytes / 4, us, algbw, algbw, us, algbw, algbw);
  };
  return std::string(kNcclTestsHeader) + row(1 << 20, us_1mib) + row(4 << 20, us_4mib);
}

std::vector<std::vector<std::string>> csv_rows(const std::string& text) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream in(text);
  std::string line;
  std::getline(in, line);
  while (std::getline(in, line)) {
    std::vector<std::string> cells;
    std::stringstream ss(line);
    for (std::string c; std::getline(ss, c, ',');) cells.push_back(c);
    rows.push_back(cells);
  }
  return rows;
}

}  // namespace

TEST_CASE("compare with --shape takes a one-node and a two-node table without rank lines in one call",
          "[calibrate][cli][shape]") {
  const auto dir = fresh_dir("shape");
  write_file(dir / "s.yaml", kOneNodeScenario);
  write_file(dir / "one node.txt", posted_table(60, 200));
  write_file(dir / "two=nodes.txt", posted_table(400, 1500));  // '=' in the name: split at the last one
  auto r = run_aggsim(
      {"compare", "s.yaml", "one node.txt", "two=nodes.txt", "--collective", "all_reduce", "--shape",
       "one node.txt=8x1", "--shape", "./two=nodes.txt=16x2", "--csv", "out.csv", "-j", "2"},
      dir);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto rows = csv_rows(read_file(dir / "out.csv"));
  REQUIRE(rows.size() == 4);
  for (std::size_t i = 0; i < 4; ++i) {
    CHECK(rows[i][0] == "all_reduce");
    CHECK(rows[i][1] == (i < 2 ? "8" : "16"));
    CHECK(rows[i][2] == (i < 2 ? "1" : "2"));
  }
  CHECK(rows[2][4] == "0.0004");  // measured_s of the two-node table's first row
  // Without --collective the tables name no collective; --ranks/--nodes alone would give both
  // files the same shape.
  r = run_aggsim({"compare", "s.yaml", "one node.txt", "--ranks", "8"}, dir);
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("one node.txt:4: cannot tell which collective this is") != std::string::npos);
}

TEST_CASE("options --shape and --collective refuse what they cannot use, before any work",
          "[calibrate][cli][malformed]") {
  const auto dir = fresh_dir("shape-bad");
  write_file(dir / "s.yaml", kOneNodeScenario);
  write_file(dir / "one.txt", posted_table(60, 200));
  const auto refused = [&](const std::vector<std::string>& extra, const std::string& message) {
    std::vector<std::string> args = {"calibrate", "s.yaml", "one.txt", "--out", "c.yaml"};
    args.insert(args.end(), extra.begin(), extra.end());
    const auto r = run_aggsim(args, dir);
    INFO(r.err);
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("aggsim: error: " + message) != std::string::npos);
    CHECK_FALSE(fs::exists(dir / "c.yaml"));
  };
  refused({"--collective", "allreduce"},
          "--collective: 'allreduce' is not a collective (did you mean 'all_reduce'?); use all_reduce | "
          "all_gather | reduce_scatter | broadcast | sendrecv");
  refused({"--collective", "alltoall"}, "--collective: 'alltoall' is not a collective; use");
  refused({"--shape", "on.txt=8x1"},
          "--shape: 'on.txt=8x1': on.txt is not one of the measurement files given "
          "(did you mean 'one.txt'?)");
  refused({"--shape", "one.txt"}, "--shape: 'one.txt': expected FILE=RANKSxNODES");
  refused({"--shape", "one.txt=8"}, "--shape: 'one.txt=8': '8' is not RANKSxNODES");
  refused({"--shape", "one.txt=8x0"}, "--shape: 'one.txt=8x0': '8x0' is not RANKSxNODES");
  refused({"--shape", "one.txt=99999999x1"},
          "--shape: 'one.txt=99999999x1': '99999999x1' is not RANKSxNODES with "
          "whole numbers from 1 to 4194304");
  refused({"--shape", "one.txt=2x4"}, "--shape: 'one.txt=2x4': 4 nodes for 2 ranks");
  refused({"--shape", "one.txt=8x1", "--shape", "./one.txt=16x2"},
          "--shape: './one.txt=16x2': one.txt already has a shape (--shape one.txt=8x1)");
}

TEST_CASE("tuning lines that contradict the scenario's forced NCCL algorithm or protocol are input errors",
          "[calibrate][cli][tuning]") {
  const auto dir = fresh_dir("forced");
  const std::string scenario = std::string(kOneNodeScenario);
  const auto with_algorithm = [&](const std::string& algorithm) {
    std::string s = scenario;
    s.replace(s.find("algorithm: {name: ring_allreduce}"),
              std::string("algorithm: {name: ring_allreduce}").size(), algorithm);
    return s;
  };
  write_file(dir / "ring.yaml", with_algorithm("algorithm: {name: nccl_allreduce, nccl_algorithm: ring}"));
  write_file(dir / "ll128.yaml", with_algorithm("algorithm: {name: nccl_allreduce, protocol: ll128}"));
  write_file(dir / "auto.yaml", with_algorithm("algorithm: {name: nccl_allreduce}"));
  write_file(dir / "tree.yaml", with_algorithm("algorithm: {name: nccl_allreduce, nccl_algorithm: tree}"));
  // NCCL 2.24's lines: tree/LL for 1 MiB, ring/Simple for 4 MiB; one garbled line.
  const std::string head =
      "# Collective test starting: all_reduce_perf\n#  Rank  0 Group  0 Pid 1 on n device  0 "
      "[0x1] GPU\n#  Rank  1 Group  0 Pid 1 on n device  1 [0x1] GPU\n";
  std::string log = head;
  log += "n:1:1 [0] NCCL INFO AllReduce: 1048576 Bytes -> Algo TREE proto LL channel{Lo..Hi}={0..1}\n";
  log += "n:1:1 [0] NCCL INFO AllReduce: 4194304 Bytes -> Algo RING proto SIMPLE channel{Lo..Hi}={0..3}\n";
  log += "n:1:1 [0] NCCL INFO AllReduce: 4194304 Bytes -> Algo RING proto SIMPLE channel{Lo..Hi}={0..}\n";
  log += posted_table(60, 200);
  write_file(dir / "tuned.log", log);

  auto r = run_aggsim({"compare", "ring.yaml", "tuned.log"}, dir);
  INFO(r.err);
  CHECK(r.exit_code == 2);
  CHECK(
      r.err.find("aggsim: warning: tuned.log:6: skipped: NCCL tuning line: 'channel{Lo..Hi}={0..}' is not a "
                 "channel range") != std::string::npos);
  CHECK(r.err.find(
            "aggsim: error: tuned.log:4: algorithm.nccl_algorithm: NCCL chose tree for the 1048576-byte "
            "all_reduce of tuned.log:10, but the scenario forces ring (ring.yaml:8:") != std::string::npos);
  r = run_aggsim({"calibrate", "ll128.yaml", "tuned.log", "--out", "c.yaml"}, dir);
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("aggsim: error: tuned.log:4: algorithm.protocol: NCCL chose ll for the 1048576-byte") !=
        std::string::npos);
  CHECK_FALSE(fs::exists(dir / "c.yaml"));

  // The check itself: auto forces nothing; other algorithms than nccl_allreduce are not NCCL's.
  MeasuredRunOptions options;
  options.measurement_files = {(dir / "tuned.log").string()};
  const auto measured = read_all_measurements(options);
  REQUIRE(measured.size() == 2);
  CHECK(measured[0].observed.nccl_algorithm == "tree");
  CHECK(measured[1].observed.nccl_algorithm == "ring");
  CHECK_NOTHROW(check_observed_choices(load_scenario((dir / "auto.yaml").string(), {}), measured));
  CHECK_NOTHROW(check_observed_choices(
      load_scenario((dir / "ring.yaml").string(), {"algorithm={name: ring_allreduce}"}), measured));
  CHECK_THROWS_WITH(
      check_observed_choices(load_scenario((dir / "tree.yaml").string(), {}), measured),
      Catch::Contains("tuned.log:5: algorithm.nccl_algorithm: NCCL chose ring for the 4194304-byte"));
  CHECK_NOTHROW(check_observed_choices(load_scenario((dir / "tree.yaml").string(), {}), {measured[0]}));
}

TEST_CASE("a log run with NCCL_ALGO=Ring is compared as ring, and contradicts a scenario forcing tree",
          "[calibrate][cli][nccl_env]") {
  // Published: two HGX H100 nodes, `mpirun ... -x NCCL_ALGO=Ring -x NCCL_MIN_CTAS=24` (tests/data/README.md).
  const fs::path data = fs::path(AGGSIM_SOURCE_DIR) / "tests" / "data" / "calibration";
  const std::string log = (data / "h100_ib400_ring_ctas24_2node_all_reduce.log").string();
  const std::string scenario = (data / "nccl" / "h100_ib400.yaml").string();
  const auto dir = fresh_dir("env-ring");
  const std::vector<std::string> args = {"compare", scenario,      log,     "--collective", "all_reduce",
                                         "--shape", log + "=16x2", "--csv", "ring.csv"};
  auto r = run_aggsim(args, dir);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(
      r.err.find("h100_ib400_ring_ctas24_2node_all_reduce.log:1: NCCL_IB_QPS_PER_CONNECTION=2 (the simulated "
                 "machine is the scenario's): not followed by the simulation") != std::string::npos);
  CHECK(r.err.find("aggsim: note: " + log + ":1: NCCL_ALGO: this log's all_reduce points run ring\n") !=
        std::string::npos);
  CHECK(
      r.err.find("aggsim: note: " + log +
                 ":1: NCCL's channel settings: this log's points run on at least 24 channels, unless an init "
                 "line counts them\n") != std::string::npos);
  const auto rows = csv_rows(read_file(dir / "ring.csv"));
  REQUIRE(rows.size() == 14);
  // Ring at every size (the model's own choice on two such nodes is NVLS-Tree, 40 - 60 % faster than
  // this log), and the published times within 25 % each from 64 MiB, 10 % as a geometric mean. Below
  // 64 MiB (ring/LL128) the piece-by-piece reference (movement: chunk) is itself 24 - 31 % faster
  // than this log (119 us at 1 MiB, 124 us at 4 MiB against 157 and 178 us measured), so the
  // uncalibrated model is held to 35 % there.
  double log_sum = 0;
  for (const auto& row : rows) {
    INFO(row[3]);
    CHECK(row[7].rfind("ring/", 0) == 0);
    const double error = std::fabs(std::stod(row[6]));
    CHECK(error < (std::stod(row[3]) < 64.0 * (1 << 20) ? 0.35 : 0.25));
    log_sum += std::log(std::max(error, 1e-4));
  }
  CHECK(std::exp(log_sum / rows.size()) < 0.10);

  // Forcing tree in the scenario contradicts the log's NCCL_ALGO: an error at the launch line.
  r = run_aggsim({"compare", scenario, log, "--collective", "all_reduce", "--shape", log + "=16x2", "--set",
                  "algorithm.nccl_algorithm=tree"},
                 dir);
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("h100_ib400_ring_ctas24_2node_all_reduce.log:1: algorithm.nccl_algorithm: this log's "
                   "NCCL_ALGO runs ring in its all_reduce, but the scenario forces tree") !=
        std::string::npos);
  fs::remove_all(dir);
}
