// calibrate with nccl_allreduce fits the costs of what NCCL ran: each measured point runs with the
// algorithm, protocol and channels of NCCL's tuning lines (or the init lines' channels), not with
// the model's own choice.
#include <fmt/format.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <utility>

#include "algorithms/nccl/protocol.hpp"
#include "algorithms/registry.hpp"
#include "sim/calibrate/point_plan.hpp"
#include "sim/platform/topology.hpp"
#include "sim/scenario/calibration.hpp"
#include "support/cli.hpp"
#include "support/csv.hpp"
#include "support/line_fit.hpp"

using namespace aggsim;
using namespace aggsim::test;
namespace fs = std::filesystem;

namespace {

// Two GPUs on one 10 GB/s link: every byte of a 2-rank all-reduce crosses it once each way
// (2(p-1)/p = 1), so a bandwidth-bound point takes size / (link x share x protocol efficiency).
const char* kScenario = R"(name: obs
ranks: 2
steps: 1
platform: {topology: cluster, nodes: 1, gpus_per_node: 2, intra_bandwidth: 10GBps, intra_latency: 0.5us,
           bandwidth: 10GBps, latency: 1us}
model: {size: 1MB, math: off}
algorithm: {name: nccl_allreduce}
compute: {reduce_speed: 0}
)";

constexpr double kMeasuredBps = 2e9;  // what the log's times say the call reached
constexpr double kIntercept = 20e-6;

// An nccl-tests log of that node whose NCCL printed ring/LL on 2 channels for every size (as with
// NCCL_PROTO=LL), its times size / 2 GB/s + 20 us.
std::string ll_log(const std::vector<std::uint64_t>& sizes) {
  std::string log =
      "# Collective test starting: all_reduce_perf\n"
      "#  Rank  0 Group  0 Pid 1 on n device  0 [0x1] GPU\n"
      "#  Rank  1 Group  0 Pid 1 on n device  1 [0x1] GPU\n"
      "n:1:1 [0] NCCL INFO 2 coll channels, 0 nvls channels, 2 p2p channels, 2 p2p channels per peer\n"
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   "
      "algbw   busbw #wrong\n"
      "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  "
      "(GB/s)  (GB/s)\n";
  for (const std::uint64_t bytes : sizes) {
    for (int call = 0; call < 3; ++call)
      log += fmt::format(
          "n:1:1 [0] NCCL INFO AllReduce: {} Bytes -> Algo RING proto LL channel{{Lo..Hi}}={{0..1}}\n",
          bytes);
    const double us = (static_cast<double>(bytes) / kMeasuredBps + kIntercept) * 1e6;
    const double algbw = static_cast<double>(bytes) / (us * 1e3);
    log += fmt::format(
        "{:>12} {:>13}     float     sum      -1  {:9.2f}  {:6.3f}  {:6.3f}      0  {:9.2f}  "
        "{:6.3f}  {:6.3f}      0\n",
        bytes, bytes / 4, us, algbw, algbw, us, algbw, algbw);
  }
  return log;
}

}  // namespace

TEST_CASE("the NCCL fit runs each point as NCCL's tuning lines say, not as the model would choose",
          "[calibrate][nccl][tuning][cli]") {
  const auto dir = fresh_dir("observed-fit");
  write_file(dir / "s.yaml", kScenario);
  const std::vector<std::uint64_t> sizes = {4u << 20, 16u << 20, 64u << 20, 256u << 20};
  write_file(dir / "ll.log", ll_log(sizes));

  // The model's own choice at these sizes is not ring/LL (LL halves the bandwidth).
  auto r = run_aggsim(
      {"perf", "s.yaml", "--min", "4MiB", "--max", "256MiB", "--factor", "4", "--csv", "own.csv"}, dir);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  for (const auto& row : read_csv_rows(read_file(dir / "own.csv"))) CHECK(row.at("choice") != "ring/ll");

  r = run_aggsim({"calibrate", "s.yaml", "ll.log", "--out", "fit.yaml", "-j", "2"}, dir);
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  const auto cal = load_calibration((dir / "fit.yaml").string(), &find_topology("cluster")->params);
  REQUIRE(fitted_protocol_costs(cal.model.get()));
  CHECK(cal.observed_choices == std::vector<std::string>{"ring/ll"});
  CHECK(cal.algorithm == "nccl_allreduce");
  CHECK(cal.link_classes == std::vector<std::string>{"intra"});
  CHECK(cal.fabric.empty());  // no point crossed nodes

  // LL's cost is what the fit ran: doubling it moves every point, so the fit identifies it or the
  // intra bandwidth, which on one link class scales an LL piece's time alike (in the pipeline as in
  // the streams): exactly one of the two, the other reported as indistinguishable. A fit on the
  // model's own choice (no LL) would find that doubling LL's cost moves no point.
  const std::string report = read_file(dir / "fit.report.txt");
  const auto identified = [&](const char* name) {
    return std::find(cal.identified.begin(), cal.identified.end(), name) != cal.identified.end();
  };
  CHECK(identified("efficiency.ll") != identified("bandwidth.intra"));
  CHECK((report.find("efficiency.ll: the data cannot tell it from the parameters fitted before it") !=
             std::string::npos ||
         report.find("bandwidth.intra: the data cannot tell it from the parameters fitted before it") !=
             std::string::npos));
  CHECK(report.find("efficiency.ll: doubling it moves no point") == std::string::npos);

  // Closed form from the data: the least-squares line through (size, time) extrapolated to 1 GiB,
  // four times the largest size measured, against the calibrated model run as NCCL ran (ring/LL).
  std::vector<double> x, y;
  for (const std::uint64_t b : sizes) {
    x.push_back(static_cast<double>(b));
    y.push_back(x.back() / kMeasuredBps + kIntercept);
  }
  const auto [intercept, slope] = least_squares_line(x, y);
  write_file(dir / "s_ll.yaml",
             std::string(kScenario).replace(std::string(kScenario).find("{name: nccl_allreduce}"),
                                            std::string("{name: nccl_allreduce}").size(),
                                            "{name: nccl_allreduce, nccl_algorithm: ring, protocol: ll}") +
                 "calibration: fit.yaml\n");
  r = run_aggsim({"perf", "s_ll.yaml", "--min", "1GiB", "--max", "1GiB", "--csv", "held.csv"}, dir);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto held = read_csv_rows(read_file(dir / "held.csv"));
  REQUIRE(held.size() == 1);
  CHECK(std::stod(held[0].at("time_s")) == Approx(intercept + slope * (1u << 30)).epsilon(0.02));
  // And every point, run as NCCL ran it, reproduces its measured time.
  r = run_aggsim({"compare", "s_ll.yaml", "ll.log", "--csv", "cmp.csv"}, dir);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  for (const auto& row : read_csv_rows(read_file(dir / "cmp.csv"))) {
    INFO(row.at("bytes"));
    CHECK(std::fabs(std::stod(row.at("rel_error"))) < 0.03);
    CHECK(row.at("choice") == "ring/ll");
    CHECK(row.at("choice_observed") == "1");
  }
}

TEST_CASE(
    "a measured point follows NCCL's observed algorithm, protocol and channels where the model has them",
    "[calibrate][nccl][tuning]") {
  Scenario nccl;
  nccl.algorithm.name = "nccl_allreduce";
  nccl.algorithm.entry = find_algorithm(nccl.algorithm.name);  // as the loader sets it
  Measurement m;
  m.collective = "all_reduce";
  m.ranks = 16;
  m.nodes = 2;
  m.bytes = 1 << 20;
  const auto sets = [&](const Scenario& sc, std::string* missed = nullptr, bool observed_too = true) {
    PointPlan plan;
    const MissedChoice why = follow_observed_choice(sc, m, plan, observed_too);
    if (missed) *missed = why.what;
    return plan.sets;
  };
  using Sets = std::vector<std::string>;
  CHECK(sets(nccl).empty());  // nothing observed: the model chooses
  m.init_channels = 4;
  CHECK(sets(nccl) == Sets{"algorithm.comm_channels=4"});
  m.observed = {"tree", "ll128", 0};
  CHECK(sets(nccl) ==
        Sets{"algorithm.nccl_algorithm=tree", "algorithm.protocol=ll128", "algorithm.comm_channels=4"});
  m.observed = {"ring", "simple", 8};  // the tuning line's channels win over the init line's
  CHECK(sets(nccl) ==
        Sets{"algorithm.nccl_algorithm=ring", "algorithm.protocol=simple", "algorithm.channels=8"});
  m.observed = {"ring", "simple", 64};  // NCCL >= 2.22 opens up to 64; the model 32
  CHECK(sets(nccl) ==
        Sets{"algorithm.nccl_algorithm=ring", "algorithm.protocol=simple", "algorithm.channels=32"});
  std::string missed;
  m.observed = {"pat", "simple", 4};  // not in the model: its own choice, on the init lines' channels
  CHECK(sets(nccl, &missed) == Sets{"algorithm.comm_channels=4"});
  CHECK(missed == "NCCL's algorithm pat (the model's choice is used)");
  m.collective = "all_gather";  // runs NCCL's ring here: a tree would not be followed
  m.observed = {"ring", "ll", 0};
  CHECK(sets(nccl) ==
        Sets{"algorithm.nccl_algorithm=ring", "algorithm.protocol=ll", "algorithm.comm_channels=4"});
  Scenario ring;
  ring.algorithm.name = "ring_allreduce";
  ring.algorithm.entry = find_algorithm(ring.algorithm.name);
  CHECK(sets(ring).empty());

  // The log's NCCL_ALGO / NCCL_PROTO / NCCL_MIN_NCHANNELS: followed where no tuning line says more,
  // and by compare (observed_too false), which ignores what NCCL printed of its own choice.
  m.collective = "all_reduce";
  m.observed = {};
  m.init_channels = 0;
  m.env.algorithm = "ring";
  m.env.min_channels = 24;
  CHECK(sets(nccl) == Sets{"algorithm.nccl_algorithm=ring", "algorithm.min_channels=24"});
  m.env.protocol = "simple";
  m.env.max_channels = 40;
  CHECK(sets(nccl, nullptr, false) == Sets{"algorithm.nccl_algorithm=ring", "algorithm.protocol=simple",
                                           "algorithm.min_channels=24", "algorithm.max_channels=32"});
  m.init_channels = 16;  // the init line already counts what the bounds left
  CHECK(sets(nccl) ==
        Sets{"algorithm.nccl_algorithm=ring", "algorithm.protocol=simple", "algorithm.comm_channels=16"});
  m.observed = {"tree", "ll128", 0};  // NCCL's tuning lines win in calibrate, not in compare
  CHECK(sets(nccl) ==
        Sets{"algorithm.nccl_algorithm=tree", "algorithm.protocol=ll128", "algorithm.comm_channels=16"});
  CHECK(sets(nccl, nullptr, false) == Sets{"algorithm.nccl_algorithm=ring", "algorithm.protocol=simple",
                                           "algorithm.min_channels=24", "algorithm.max_channels=32"});

  // Settings NCCL could not run on the log's ranks are input errors at their line.
  nccl.platform.shape.nvswitch = true;
  m.observed = {};
  m.env = {};
  m.env.algorithm = "nvls";
  m.env.algorithm_where = "run.log:1";
  CHECK_THROWS_WITH(sets(nccl),
                    "run.log:1: NCCL_ALGO leaves all_reduce only NVLS, which NCCL runs inside one "
                    "node, and this log's points span 2 nodes (NVLS-Tree joins nodes)");
  m.env.algorithm = "nvls_tree";
  m.env.protocol = "ll";
  m.env.protocol_where = "run.log:2";
  CHECK_THROWS_WITH(sets(nccl),
                    "run.log:2: NCCL_PROTO leaves all_reduce only ll, and NCCL_ALGO only nvls_tree, "
                    "which NCCL runs with the simple protocol only");
  m.nodes = 1;
  CHECK_THROWS_WITH(sets(nccl), Catch::Contains("run.log:1: NCCL_ALGO leaves all_reduce only NVLS-Tree"));
  m.env.algorithm = "nvls";
  m.env.protocol = "simple";
  CHECK(sets(nccl) ==
        Sets{"algorithm.nccl_algorithm=nvls", "algorithm.protocol=simple", "algorithm.comm_channels=16"});
}

// ll_log of four GPUs (NCCL runs NVLS on nodes of more than two) with NCCL's tuning lines saying
// NVLS/Simple, and the line of the first of them.
std::pair<std::string, long> nvls_log() {
  std::string log = ll_log({4u << 20, 16u << 20});
  const std::string rank1 = "#  Rank  1 Group  0 Pid 1 on n device  1 [0x1] GPU\n";
  log.replace(log.find(rank1), rank1.size(),
              rank1 + "#  Rank  2 Group  0 Pid 1 on n device  2 [0x1] GPU\n"
                      "#  Rank  3 Group  0 Pid 1 on n device  3 [0x1] GPU\n");
  for (std::size_t at = 0; (at = log.find("Algo RING proto LL ", at)) != std::string::npos;)
    log.replace(at, 19, "Algo NVLS proto SIMPLE ");
  const std::string before_first = log.substr(0, log.find("Algo NVLS"));
  return {log, 1 + std::count(before_first.begin(), before_first.end(), '\n')};
}

TEST_CASE("NCCL's NVLS in a log, on a platform generated without a switch, is refused at the log's line",
          "[calibrate][nccl][tuning][cli]") {
  const auto dir = fresh_dir("observed-nvls");
  write_file(dir / "s.yaml", kScenario);  // platform.nvswitch left at false
  const auto [log, line] = nvls_log();
  write_file(dir / "nvls.log", log);
  const auto r = run_aggsim({"calibrate", "s.yaml", "nvls.log", "--out", "cal.yaml"}, dir);
  INFO(r.err);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::StartsWith(fmt::format("aggsim: error: nvls.log:{}: NCCL ran nvls here", line)));
  CHECK_THAT(r.err, Catch::Contains("the scenario's platform (s.yaml:4:11) has none"));
  CHECK_THAT(r.err, Catch::Contains("platform.nvswitch: true"));
  CHECK(!fs::exists(dir / "cal.yaml"));
  // With the switch described, the same log calibrates.
  std::string with_switch = kScenario;
  with_switch.replace(with_switch.find("gpus_per_node: 2,"), 17, "gpus_per_node: 2, nvswitch: true,");
  write_file(dir / "s.yaml", with_switch);
  const auto ok = run_aggsim({"calibrate", "s.yaml", "nvls.log", "--out", "cal.yaml"}, dir);
  INFO(ok.err);
  CHECK(ok.exit_code == 0);
  // GPUs without NVLS (an A100's switch does not reduce): refused at the log's line, naming the key.
  std::string ampere = with_switch;
  ampere.replace(ampere.find("{name: nccl_allreduce}"), 22, "{name: nccl_allreduce, gpu: ampere}");
  write_file(dir / "s.yaml", ampere);
  auto refused = run_aggsim({"calibrate", "s.yaml", "nvls.log", "--out", "cal2.yaml"}, dir);
  CHECK(refused.exit_code == 2);
  CHECK_THAT(refused.err, Catch::StartsWith(fmt::format("aggsim: error: nvls.log:{}: NCCL ran nvls here", line)));
  CHECK_THAT(refused.err, Catch::Contains("GPU generation is ampere"));
  // Two GPUs a node: NCCL never runs NVLS there.
  std::string two = log;
  const std::string extra = "#  Rank  2 Group  0 Pid 1 on n device  2 [0x1] GPU\n"
                            "#  Rank  3 Group  0 Pid 1 on n device  3 [0x1] GPU\n";
  two.erase(two.find(extra), extra.size());
  write_file(dir / "two.log", two);
  write_file(dir / "s.yaml", with_switch);
  refused = run_aggsim({"calibrate", "s.yaml", "two.log", "--out", "cal2.yaml"}, dir);
  CHECK(refused.exit_code == 2);
  CHECK_THAT(refused.err, Catch::Contains("NCCL runs NVLS only on nodes of more than 2 GPUs"));
  CHECK(!fs::exists(dir / "cal2.yaml"));
}

TEST_CASE(
    "NCCL's NVLS in a log, on a platform file that gives no host a switch, is refused at the log's line",
    "[calibrate][nccl][tuning][cli]") {
  const auto dir = fresh_dir("observed-nvls-xml");
  // A node of four GPUs as a file, each on its own 10 GB/s link to the others.
  const auto platform = [&](const std::string& host_props) {
    std::string hosts, links, routes;
    for (int h = 0; h < 4; ++h) {
      hosts += fmt::format(R"(<host id="gpu-{}" speed="100Gf"><prop id="aggsim_node" value="0"/>{}</host>)",
                           h, host_props);
      links += fmt::format(R"(<link id="nvlink-{}" bandwidth="10GBps" latency="0.5us"/>)", h);
      for (int o = 0; o < h; ++o)
        routes += fmt::format(R"(<route src="gpu-{}" dst="gpu-{}"><link_ctn id="nvlink-{}"/><link_ctn id="nvlink-{}"/></route>)",
                              o, h, o, h);
    }
    write_file(dir / "node.xml", fmt::format(R"(<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1">
  <zone id="node" routing="Full">
    {}
    {}
    {}
  </zone>
</platform>
)",
                                             hosts, links, routes));
  };
  std::string scenario = kScenario;
  const auto from = scenario.find("platform:"), to = scenario.find("model:");
  scenario.replace(from, to - from, "platform: {file: node.xml}\n");
  write_file(dir / "s.yaml", scenario);
  const auto [log, line] = nvls_log();
  write_file(dir / "nvls.log", log);
  // A property other than the switch's, to show the check reads which property is set.
  platform(R"(<prop id="aggsim_nvswitch" value="false"/>)");
  const auto r = run_aggsim({"calibrate", "s.yaml", "nvls.log", "--out", "cal.yaml"}, dir);
  INFO(r.err);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::StartsWith(fmt::format("aggsim: error: nvls.log:{}: NCCL ran nvls here", line)));
  CHECK_THAT(r.err, Catch::Contains("node.xml) has none"));
  CHECK_THAT(r.err, Catch::Contains("aggsim_nvswitch=\"true\" in XML"));
  CHECK(!fs::exists(dir / "cal.yaml"));
  // Both hosts on the switch: the same log calibrates, its points run as NVLS.
  platform(R"(<prop id="aggsim_nvswitch" value="true"/>)");
  const auto ok = run_aggsim({"calibrate", "s.yaml", "nvls.log", "--out", "cal.yaml"}, dir);
  INFO(ok.err);
  CHECK(ok.exit_code == 0);
}
