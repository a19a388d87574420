// Calibration of nccl_allreduce end to end: times simulated under known protocol costs (a "machine"
// whose network hops, base latency and link shares differ from NCCL's defaults) are fitted on one
// node and 2 nodes (two scales tell a call's base latency from its hops'), and the fit predicts
// 4 nodes, at sizes where NCCL's choice changes; the calibration
// records what it saw, and compare marks sizes and choices outside it.
#include <fmt/format.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <sstream>

#include "algorithms/nccl/calibration/nccl_fit.hpp"
#include "sim/platform/topology.hpp"
#include "sim/scenario/calibration.hpp"
#include "support/cli.hpp"
#include "support/csv.hpp"

using namespace aggsim::test;
namespace fs = std::filesystem;

namespace {

const char* kScenario = R"(name: ncal
ranks: 8
steps: 1
platform: {topology: cluster, nodes: 2, gpus_per_node: 4, intra_bandwidth: 100GBps, intra_latency: 0.5us,
           nics_per_node: 2, nic_bandwidth: 100Gbps, bandwidth: 100Gbps, latency: 1us}
model: {size: 1MB, math: off}
algorithm: {name: nccl_allreduce}
compute: {reduce_speed: 0}
)";

// The machine: slower network hops and calls, 80 % of the NICs' bandwidth.
const char* kTruth = R"(network: auto
factors:
  intra: [{from: 0B, latency: 1, bandwidth: 0.95}]
  inter: [{from: 0B, latency: 1, bandwidth: 0.8}]
nccl:
  hop_latency_us: {network: {ll: 4, ll128: 6, simple: 20}}
  base_latency_scale: 1.4
)";

// An `aggsim perf` CSV of all-reduce on `nodes` nodes, as a measurement CSV
// (collective,ranks,nodes,bytes,time).
void write_measurement(const fs::path& perf_csv, int nodes, const fs::path& out) {
  std::string text = "collective,ranks,nodes,bytes,time\n";
  for (const auto& row : read_csv_rows(read_file(perf_csv)))
    text +=
        fmt::format("all_reduce,{},{},{},{}\n", row.at("ranks"), nodes, row.at("bytes"), row.at("time_s"));
  write_file(out, text);
}

// `aggsim perf` under the truth, as a measurement CSV.
std::string measure(const fs::path& dir, int nodes, const std::string& name) {
  const auto r =
      run_aggsim({"perf", "s.yaml", "--set", "calibration=truth.yaml", "--set",
                  fmt::format("ranks={}", nodes * 4), "--set", fmt::format("platform.nodes={}", nodes),
                  "--min", "4KiB", "--max", "4GiB", "--factor", "16", "--csv", name + ".perf.csv", "-j", "2"},
                 dir);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  write_measurement(dir / (name + ".perf.csv"), nodes, dir / (name + ".csv"));
  return name + ".csv";
}

// Two nodes of four GPUs and four NICs of `nic`, NCCL's ring on Simple forced, moved by `movement`.
std::string two_node_ring(const std::string& nic, const std::string& movement = "flow") {
  return fmt::format(R"(name: ring
ranks: 8
steps: 1
platform: {{topology: cluster, nodes: 2, gpus_per_node: 4, intra_bandwidth: 600GBps, intra_latency: 0.5us,
           nics_per_node: 4, nic_bandwidth: {0}, bandwidth: {0}, latency: 1us, fabric: infiniband}}
model: {{size: 1MB, math: off}}
algorithm: {{name: nccl_allreduce, nccl_algorithm: ring, protocol: simple, movement: {1}}}
)",
                     nic, movement);
}

}  // namespace

TEST_CASE("calibrating nccl_allreduce on 1 and 2 nodes recovers a machine's costs and predicts 4 nodes",
          "[calibrate][nccl][cli]") {
  const auto dir = fresh_dir("ncal");
  write_file(dir / "s.yaml", kScenario);
  write_file(dir / "truth.yaml", kTruth);
  const std::string one = measure(dir, 1, "one"), two = measure(dir, 2, "two"),
                    held = measure(dir, 4, "held");

  auto r = run_aggsim({"calibrate", "s.yaml", one, two, "--out", "fit.yaml", "-j", "2"}, dir);
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  const auto cal =
      aggsim::load_calibration((dir / "fit.yaml").string(), &aggsim::find_topology("cluster")->params);
  REQUIRE(fitted_protocol_costs(cal.model.get()));
  CHECK(cal.inter.steps.at(0).bandwidth == Approx(0.8).epsilon(0.03));
  CHECK(cal.measured_min_bytes == 4096);
  CHECK(cal.measured_max_bytes == 4ull << 30);
  CHECK(!cal.observed_choices.empty());
  CHECK(!cal.identified.empty());
  // What it was fitted for: this algorithm, across both link classes, on the scenario's fabric.
  CHECK(cal.algorithm == "nccl_allreduce");
  CHECK(cal.link_classes == std::vector<std::string>{"intra", "inter"});
  CHECK(cal.fabric == "infiniband");

  // Held out: 4 nodes, every size; then sizes beyond what was measured get flagged.
  write_file(dir / "s_fit.yaml", std::string(kScenario) + "calibration: fit.yaml\n");
  r = run_aggsim({"compare", "s_fit.yaml", held, "--csv", "cmp.csv", "-j", "2"}, dir);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  for (const auto& row : read_csv_rows(read_file(dir / "cmp.csv"))) {
    INFO(row.at("bytes") << " " << row.at("choice"));
    CHECK(std::fabs(std::stod(row.at("rel_error"))) < 0.10);  // the scale-out target above 1 MiB
    CHECK(row.at("in_measured_range") == "1");
    CHECK(!row.at("choice").empty());
  }
  r = run_aggsim(
      {"perf", "s_fit.yaml", "--min", "1KiB", "--max", "64GiB", "--factor", "8192", "--csv", "p.csv"}, dir);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto rows = read_csv_rows(read_file(dir / "p.csv"));
  REQUIRE(rows.size() == 3);  // 1 KiB, 8 MiB, 64 GiB
  CHECK(rows[0].at("in_measured_range") == "0");
  CHECK(rows[1].at("in_measured_range") == "1");
  CHECK(rows[2].at("in_measured_range") == "0");
  CHECK(r.out.find("range?") != std::string::npos);
}

TEST_CASE("calibrating NVLS on a node of a switch recovers the share of the ports' rate the switch reaches",
          "[calibrate][nccl][cli]") {
  const auto dir = fresh_dir("ncal-nvls");
  // Eight GPUs on a reducing switch, NVLS forced; the machine's switch runs at 60 % of the ports' rate.
  write_file(dir / "s.yaml", R"(name: nvls
ranks: 8
steps: 1
platform: {topology: cluster, nodes: 1, gpus_per_node: 8, intra_bandwidth: 450GBps, intra_latency: 0.5us,
           nvswitch: true}
model: {size: 1MB, math: off}
algorithm: {name: nccl_allreduce, nccl_algorithm: nvls}
compute: {reduce_speed: 0}
)");
  write_file(dir / "truth.yaml", "network: auto\nnccl:\n  nvls_efficiency: 0.6\n");
  auto r = run_aggsim({"perf", "s.yaml", "--set", "calibration=truth.yaml", "--min", "4MiB", "--max", "4GiB",
                       "--factor", "4", "--csv", "truth.csv", "-j", "2"},
                      dir);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  write_measurement(dir / "truth.csv", 1, dir / "measured.csv");

  r = run_aggsim({"calibrate", "s.yaml", "measured.csv", "--out", "fit.yaml", "-j", "2"}, dir);
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  const auto cal =
      aggsim::load_calibration((dir / "fit.yaml").string(), &aggsim::find_topology("cluster")->params);
  REQUIRE(fitted_protocol_costs(cal.model.get()));
  CHECK(fitted_protocol_costs(cal.model.get())->nvls_efficiency == Approx(0.6).epsilon(0.03));
  CHECK(std::find(cal.identified.begin(), cal.identified.end(), "bandwidth.nvls") != cal.identified.end());
  // The ports themselves keep their rate: the switch, not the links, is slow.
  CHECK(cal.intra.steps.at(0).bandwidth == Approx(1.0));
  CHECK(read_file(dir / "fit.report.txt").find("bandwidth.nvls") != std::string::npos);
  // A fit inside the model's bounds says nothing of them.
  CHECK(read_file(dir / "fit.report.txt").find("held at a bound") == std::string::npos);
  CHECK(r.err.find("held at a bound") == std::string::npos);
}

TEST_CASE("a parameter the data push to a bound of the model is reported and warned about",
          "[calibrate][nccl][cli]") {
  // The published two-node XE9680 log: to follow its smallest sizes (25 us from 16 B) the fit takes
  // LL's hop latency inside a node to its bound, a 50th of NCCL's, which every prediction on LL then
  // carries.
  const fs::path data = fs::path(AGGSIM_SOURCE_DIR) / "tests" / "data" / "calibration";
  const auto dir = fresh_dir("ncal-bound");
  const auto r = run_aggsim({"calibrate", (data / "nccl" / "xe9680_h100.yaml").string(),
                             (data / "xe9680_h100_2node_all_reduce.log").string(), "--out", "fit.yaml"},
                            dir);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.find("aggsim: warning: hop_latency.intra.ll is held at a bound of the model (0.02)") !=
        std::string::npos);
  const std::string report = read_file(dir / "fit.report.txt");
  CHECK(report.find("hop_latency.intra.ll               0.02 (NCCL: 1) fitted, at a bound") !=
        std::string::npos);
  CHECK(report.find("held at a bound of the model (the data ask for more than it allows):\n- ") !=
        std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("a fit that asks for links faster than the platform's is held at their rate, and says so",
          "[calibrate][nccl][cli]") {
  // Measured on NICs of twice the rate the scenario's platform gives (as when NCCL ran an algorithm
  // that carries twice the model's bus bandwidth): the network's share stops at the platform's rate,
  // fitted, at a bound, with a warning; and no parameter the fit moved is labelled assumed.
  const auto dir = fresh_dir("ncal-faster");
  write_file(dir / "s.yaml", two_node_ring("100Gbps"));
  write_file(dir / "truth.yaml", two_node_ring("200Gbps"));
  auto r = run_aggsim(
      {"perf", "truth.yaml", "--min", "4MiB", "--max", "1GiB", "--factor", "4", "--csv", "truth.csv"}, dir);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  write_measurement(dir / "truth.csv", 2, dir / "measured.csv");
  r = run_aggsim({"calibrate", "s.yaml", "measured.csv", "--out", "fit.yaml"}, dir);
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.find("aggsim: warning: bandwidth.network is held at a bound of the model (1)") !=
        std::string::npos);
  const auto cal =
      aggsim::load_calibration((dir / "fit.yaml").string(), &aggsim::find_topology("cluster")->params);
  CHECK(std::find(cal.identified.begin(), cal.identified.end(), "bandwidth.network") != cal.identified.end());
  CHECK(cal.inter.steps.at(0).bandwidth == 1.0);
  // Every parameter the report gives a value other than NCCL's is one the data fitted.
  std::istringstream report(read_file(dir / "fit.report.txt"));
  int rows = 0;
  for (std::string line; std::getline(report, line);) {
    std::istringstream words(line);
    std::string name, value, nccl, nccl_value, how;
    if (!(words >> name >> value >> nccl >> nccl_value >> how) || nccl != "(NCCL:") continue;
    ++rows;
    INFO(line);
    if (std::stod(value) != std::stod(nccl_value.substr(0, nccl_value.size() - 1)))
      CHECK(how.rfind("fitted", 0) == 0);
  }
  CHECK(rows == aggsim::kNcclParams);
  CHECK(read_file(dir / "fit.report.txt")
            .find("bandwidth.network                     1 (NCCL: 1) fitted, at a bound") !=
        std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("a calibration's bandwidth factor moves NCCL's paced streams as a link of that rate would",
          "[calibrate][nccl][cli]") {
  // NCCL's flow level paces its streams by the links' rates; the network applies a calibration's
  // factor to each transfer. A factor of 2 (or 0.5) between nodes must time the call like NICs of
  // twice (or half) the rate, at flow level and piece by piece, faster as well as slower.
  const auto dir = fresh_dir("ncal-factor");
  const auto busbw = [&](const std::string& file, const std::vector<std::string>& extra) {
    std::vector<std::string> args = {"perf", file, "--min", "256MiB", "--max", "256MiB", "--csv", "p.csv"};
    args.insert(args.end(), extra.begin(), extra.end());
    const auto r = run_aggsim(args, dir);
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    return std::stod(read_csv_rows(read_file(dir / "p.csv")).at(0).at("busbw_GBps"));
  };
  for (const std::string movement : {"flow", "chunk"}) {
    INFO(movement);
    write_file(dir / "s.yaml", two_node_ring("100Gbps", movement));
    const double nominal = busbw("s.yaml", {});
    for (const auto& [factor, nic] :
         {std::pair<std::string, std::string>{"2", "200Gbps"}, {"0.5", "50Gbps"}}) {
      INFO("factor " << factor);
      write_file(
          dir / "cal.yaml",
          "network: auto\nfactors:\n  inter:\n    - {from: 0B, latency: 1, bandwidth: " + factor + "}\n");
      write_file(dir / "t.yaml", two_node_ring(nic, movement));
      const double calibrated = busbw("s.yaml", {"--set", "calibration=cal.yaml"});
      const double faster_links = busbw("t.yaml", {});
      CHECK(calibrated == Approx(faster_links).epsilon(0.01));
      CHECK(std::abs(calibrated / nominal - std::stod(factor)) < 0.05 * std::stod(factor));
    }
  }
  fs::remove_all(dir);
}
