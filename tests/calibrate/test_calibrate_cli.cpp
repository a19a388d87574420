// `aggsim calibrate` and `aggsim compare` end to end: against measurements made from closed-form
// alpha-beta costs with known factors (the fit must find them and predict held-out scales), against
// public hardware results (the validation table of sim/calibrate/VALIDATION.md), and on bad input.
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "calibration_fixture.hpp"
#include "sim/platform/topology.hpp"
#include "sim/scenario/calibration.hpp"
#include "support/cli.hpp"

using namespace aggsim::test;
namespace fs = std::filesystem;

namespace {

struct Factors {
  double latency, bandwidth;
};
// The "machine": messages under 64 KiB pay more latency and get less bandwidth than larger ones.
Factors intra_truth(double m) {
  return m < 65536 ? Factors{5, 0.4} : Factors{2, 0.8};
}
Factors inter_truth(double m) {
  return m < 65536 ? Factors{3, 0.5} : Factors{1.5, 0.9};
}

// A ring all-reduce of S bytes on p ranks, n nodes: 2(p-1) steps of S/p-byte messages. Within a node
// a message crosses two GPU links; between nodes GPU link, NIC, fabric up and down, NIC, GPU link.
// Every step waits for its slowest message (an inter-node one as soon as n > 1).
double ring_time(double S, int p, int n) {
  const double m = S / p, ai = 1e-6, bi = 100e9, ae = 10e-6, be = 10e9;
  const Factors fi = intra_truth(m), fe = inter_truth(m);
  const double intra = fi.latency * 2 * ai + m / (fi.bandwidth * bi);
  const double inter = fe.latency * (2 * ai + 2 * ae) + m / (fe.bandwidth * be);
  return 2 * (p - 1) * (n > 1 ? std::max(intra, inter) : intra);
}

std::string csv(const std::vector<std::tuple<int, int, double>>& points) {
  std::string out = "collective,ranks,nodes,bytes,time\n";
  for (const auto& [p, n, S] : points)
    out += fmt::format("all_reduce,{},{},{},{:.12g}\n", p, n, S, ring_time(S, p, n));
  return out;
}

std::vector<double> csv_column(const std::string& text, int column) {
  std::vector<double> values;
  std::istringstream in(text);
  std::string line;
  std::getline(in, line);
  while (std::getline(in, line)) {
    std::stringstream cells(line);
    std::string cell;
    for (int c = 0; c <= column; ++c) std::getline(cells, cell, ',');
    values.push_back(std::stod(cell));
  }
  return values;
}

const fs::path kData = fs::path(AGGSIM_SOURCE_DIR) / "tests" / "data" / "calibration";

}  // namespace

TEST_CASE("calibrate finds known piecewise factors and compare predicts other scales", "[calibrate][cli]") {
  const auto dir = fresh_dir("calibrate");
  write_file(dir / "s.yaml", kOneNodeScenario);
  // Two sizes on each side of 64 KiB messages, on one node and on two.
  write_file(dir / "train.csv", csv({{8, 1, 16384},
                                     {8, 1, 262144},
                                     {8, 1, 4194304},
                                     {8, 1, 67108864},
                                     {8, 2, 16384},
                                     {8, 2, 262144},
                                     {8, 2, 4194304},
                                     {8, 2, 67108864}}));
  auto r = run_aggsim(
      {"calibrate", "s.yaml", "train.csv", "--out", "cal/fit.yaml", "--breaks", "64KiB", "-j", "2"}, dir);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("geometric-mean error: 0.0 %") != std::string::npos);
  CHECK(fs::exists(dir / "cal" / "fit.report.txt"));
  // The format comes first, after the comment header.
  const std::string fit_text = read_file(dir / "cal" / "fit.yaml");
  CHECK(fit_text.find("\nformat: 1\nnetwork: ") != std::string::npos);
  const auto cal = aggsim::load_calibration((dir / "cal" / "fit.yaml").string(),
                                            &aggsim::find_topology("cluster")->params);
  REQUIRE(cal.intra.steps.size() == 2);
  REQUIRE(cal.inter.steps.size() == 2);
  for (const auto& [table, truth] :
       {std::pair{&cal.intra, &intra_truth}, std::pair{&cal.inter, &inter_truth}}) {
    CHECK(table->steps[0].latency == Approx(truth(1).latency).epsilon(1e-4));
    CHECK(table->steps[0].bandwidth == Approx(truth(1).bandwidth).epsilon(1e-4));
    CHECK(table->steps[1].latency == Approx(truth(1e6).latency).epsilon(1e-4));
    CHECK(table->steps[1].bandwidth == Approx(truth(1e6).bandwidth).epsilon(1e-4));
  }

  // Held out: half a node, and four nodes of four GPUs, at sizes not measured.
  write_file(dir / "s_cal.yaml", std::string(kOneNodeScenario) + "calibration: cal/fit.yaml\n");
  write_file(dir / "heldout.csv", csv({{4, 1, 65536}, {4, 1, 33554432}, {16, 4, 131072}, {16, 4, 16777216}}));
  r = run_aggsim({"compare", "s_cal.yaml", "heldout.csv", "--csv", "out/cmp.csv", "-j", "2"}, dir);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const std::string out = read_file(dir / "out" / "cmp.csv");
  CHECK(out.rfind("collective,ranks,nodes,bytes,measured_s,simulated_s,rel_error,choice,in_measured_range,"
                  "choice_observed\n",
                  0) == 0);
  const auto errors = csv_column(out, 6);
  REQUIRE(errors.size() == 4);
  for (double e : errors) CHECK(std::fabs(e) < 1e-6);
  CHECK(r.out.find("all_reduce on 16 ranks, 4 nodes") != std::string::npos);
  CHECK(r.out.find("algbw") != std::string::npos);

  // A run of the calibrated scenario names its calibration.
  r = run_aggsim({"run", "s_cal.yaml", "--out", "run", "-q"}, dir);
  REQUIRE(r.exit_code == 0);
  const auto summary = nlohmann::json::parse(read_file(dir / "run" / "summary.json"));
  CHECK(summary["calibration"].get<std::string>().find("fit.yaml") != std::string::npos);
  CHECK(read_file(dir / "run" / "resolved.yaml").find("calibration:") != std::string::npos);
}

TEST_CASE("bad calibration files and measurement logs are input errors that write nothing",
          "[calibrate][cli][malformed]") {
  const auto dir = fresh_dir("calibrate-bad");
  write_file(dir / "s.yaml", kOneNodeScenario);
  write_file(dir / "bad.yaml",
             "network: alpha_beta\nfactors:\n  intra:\n    - {from: 0B, latency: -1, bandwidth: 1}\n");
  write_file(dir / "s_bad.yaml", std::string(kOneNodeScenario) + "calibration: bad.yaml\n");
  auto r = run_aggsim({"validate", "s_bad.yaml"}, dir);
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("bad.yaml:4:") != std::string::npos);
  CHECK(r.err.find("factors.intra") != std::string::npos);

  write_file(dir / "lv.yaml", "network: lv08\n");
  write_file(dir / "s_lv.yaml", std::string(kOneNodeScenario) + "calibration: lv.yaml\n");
  r = run_aggsim({"validate", "s_lv.yaml"}, dir);
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("s_lv.yaml:10:") != std::string::npos);
  CHECK(r.err.find("fitted under network lv08") != std::string::npos);

  write_file(dir / "s_missing.yaml", std::string(kOneNodeScenario) + "calibration: nowhere.yaml\n");
  r = run_aggsim({"validate", "s_missing.yaml"}, dir);
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("calibration file not found") != std::string::npos);

  // A log cut before its first row: nothing to fit, nothing written.
  write_file(dir / "all_reduce_perf.txt",
             "# nThread 1 nGpus 8\n# Using devices\n#  Rank  0 Pid 1 on h device  0 [0x00] GPU\n"
             "#       size         count      type   redop     time   algbw   busbw  error\n"
             "     1048576        262144     flo");
  r = run_aggsim({"calibrate", "s.yaml", "all_reduce_perf.txt", "--out", "c.yaml"}, dir);
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("all_reduce_perf.txt:5: no measurement found") != std::string::npos);
  CHECK_FALSE(fs::exists(dir / "c.yaml"));
  r = run_aggsim({"compare", "s.yaml", "missing.txt"}, dir);
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("missing.txt: measurement file not found") != std::string::npos);
  // A point the scenario cannot place (3 ranks on 2 nodes) names its row.
  write_file(dir / "m.csv", "collective,ranks,nodes,bytes,time\nall_reduce,3,2,1024,1e-5\n");
  r = run_aggsim({"compare", "s.yaml", "m.csv"}, dir);
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("m.csv:2: 3 ranks on 2 nodes") != std::string::npos);
}

TEST_CASE("a calibration file without a format is format 1, and an unknown format says how to convert",
          "[calibrate][cli][malformed]") {
  const auto dir = fresh_dir("calibrate-format");
  const std::string factors =
      "network: alpha_beta\nfactors:\n  intra:\n    - {from: 0B, latency: 1, bandwidth: 1}\n";
  write_file(dir / "old.yaml", factors);
  write_file(dir / "v1.yaml", "format: 1\n" + factors);
  write_file(dir / "v2.yaml", "# from a later aggsim\nformat: 2\n" + factors);
  for (const char* name : {"old", "v1"}) {
    write_file(dir / (std::string("s_") + name + ".yaml"),
               std::string(kOneNodeScenario) + "calibration: " + name + ".yaml\n");
    const auto r = run_aggsim({"validate", std::string("s_") + name + ".yaml"}, dir);
    INFO(name << ": " << r.err);
    CHECK(r.exit_code == 0);
  }
  write_file(dir / "s_v2.yaml", std::string(kOneNodeScenario) + "calibration: v2.yaml\n");
  const auto r = run_aggsim({"validate", "s_v2.yaml"}, dir);
  CHECK(r.exit_code == 2);
  CHECK(r.err.find(
            "v2.yaml:2:9: format: calibration format 2 is not one this aggsim reads (it reads format 1)") !=
        std::string::npos);
  CHECK(r.err.find("rerun `aggsim calibrate`") != std::string::npos);
}
