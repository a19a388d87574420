// Named systems against published nccl-tests (and RCCL-tests) results, without calibration: `aggsim compare` of
// `platform: {system: dgx_h100, nodes: N}` with each published table (tests/data/calibration, sources
// in tests/data/README.md). The results are tests/data/calibration/validation/systems.csv, which
// platforms/README.md renders; this test recomputes every row, so the table cannot drift.
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "support/cli.hpp"
#include "support/csv.hpp"

using namespace aggsim::test;
namespace fs = std::filesystem;

namespace {

const fs::path kData = fs::path(AGGSIM_SOURCE_DIR) / "tests" / "data" / "calibration";

// nccl-tests' all-reduce bus bandwidth, GB/s, of `bytes` in `seconds` on `ranks`.
double busbw(double bytes, double seconds, int ranks) {
  return bytes / seconds / 1e9 * 2 * (ranks - 1) / ranks;
}

// Simulated busbw by size ("1024 MiB") of `log`'s points from 1 GiB, on `nodes` of `system` with
// `ranks` GPUs in all.
std::map<std::string, double> simulated(const std::string& system, int nodes, int ranks, const std::string& log) {
  const auto dir = fresh_dir("system-published");
  write_file(dir / "s.yaml",
             fmt::format("name: {}\nranks: {}\nsteps: 1\nplatform: {{system: {}, nodes: {}}}\n"
                         "model: {{size: 1MB, math: off}}\nalgorithm: {{name: nccl_allreduce}}\n",
                         system, ranks, system, nodes));
  const std::string file = (kData / (log + "_all_reduce.log")).string();
  std::vector<std::string> args = {"compare", "s.yaml", file, "--csv", "c.csv"};
  // A log without its "Rank N ... on HOST" lines gets its shape from the row.
  if (read_file(file).find(" Rank ") == std::string::npos)
    args.insert(args.end(), {"--shape", fmt::format("{}={}x{}", file, ranks, nodes)});
  const auto r = run_aggsim(args, dir);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  std::map<std::string, double> out;
  for (const auto& row : read_csv_rows(read_file(dir / "c.csv"))) {
    const double bytes = std::stod(row.at("bytes"));
    if (bytes < (1 << 30)) continue;
    out[fmt::format("{} MiB", bytes / (1 << 20))] = busbw(bytes, std::stod(row.at("simulated_s")), ranks);
  }
  fs::remove_all(dir);
  return out;
}

// Every row of systems.csv on `nodes` nodes: the simulation gives its simulated busbw, and (where
// `within_15_percent`, from `within_from_bytes` up) it lies within 15 % of the measured one.
void check_rows(const std::string& system, int nodes, bool within_15_percent, double within_from_bytes = 0) {
  const auto rows = read_csv_rows(read_file(kData / "validation" / "systems.csv"));
  std::map<std::string, std::map<std::string, double>> by_log;
  int checked = 0;
  for (const auto& row : rows) {
    if (row.at("system") != system || std::stoi(row.at("nodes")) != nodes) continue;
    const std::string& log = row.at("log");
    if (!by_log.count(log)) by_log[log] = simulated(system, nodes, std::stoi(row.at("ranks")), log);
    INFO(row.at("system") << " x " << nodes << " against " << log << " at " << row.at("size")
                          << " (regenerate the row if the model changed)");
    REQUIRE(by_log[log].count(row.at("size")));
    const double sim = by_log[log][row.at("size")], measured = std::stod(row.at("measured_busbw_gb_s"));
    CHECK(sim == Approx(std::stod(row.at("simulated_busbw_gb_s"))).margin(0.051));
    if (within_15_percent && std::stod(row.at("size")) * (1 << 20) >= within_from_bytes)
      CHECK(std::fabs(sim / measured - 1) <= 0.15);
    ++checked;
  }
  CHECK(checked > 0);
}

}  // namespace

TEST_CASE("dgx_h100 on one node predicts published nccl-tests within 15 % from 1 GiB",
          "[systems][published]") {
  check_rows("dgx_h100", 1, true);
}

TEST_CASE("dgx_h100 on two nodes predicts published nccl-tests within 15 % from 1 GiB",
          "[systems][published]") {
  check_rows("dgx_h100", 2, true);
}

// Four and eight nodes: the model's ring runs the NICs at their full 400 Gb/s (400 GB/s busbw);
// the published clusters reach 0.80 - 0.91 of it. The table shows the gap; the rows still must be
// what the model computes.
TEST_CASE("dgx_h100 on four and eight nodes: the published table's simulated column is the model's",
          "[systems][published]") {
  check_rows("dgx_h100", 4, false);
  check_rows("dgx_h100", 8, false);
}

// One GB200 NVL72 rack (18 trays of 4 GPUs, one NVLink domain, so NVLS over all 72 GPUs) against a
// published full-rack run (coreweave/nccl-tests#43). NVLS runs at the rate NCCL 2.30.7's tuning credits
// it with: 32 heads (NCCL_MAX_NVLS_ARITY) whose 33 channels share a GPU's 721.8 GB/s, so 20 GB/s a
// channel, times nvlsEfficiency 0.74. From 4 GiB, where the run stopped climbing, the model lies
// within 15 %; at 1 and 2 GiB the run still climbed (a fixed cost of about 0.7 ms a call, which
// neither this model nor NCCL's tuning has), and the table shows that gap.
TEST_CASE("gb200_nvl72 on one rack predicts the published full-rack run within 15 % from 4 GiB",
          "[systems][published]") {
  check_rows("gb200_nvl72", 18, true, 4.0 * (1 << 30));
}

// AMD Instinct nodes (an xGMI mesh, RCCL) against published RCCL-tests runs on AMD's own clusters.
TEST_CASE("mi300x on one and two nodes predicts published RCCL-tests within 15 % from 1 GiB",
          "[systems][published][xgmi]") {
  check_rows("mi300x", 1, true);
  check_rows("mi300x", 2, true);
}

TEST_CASE("mi325x on one to eight nodes predicts published RCCL-tests within 15 % from 4 GiB",
          "[systems][published][xgmi]") {
  for (int nodes : {1, 2, 4, 8}) check_rows("mi325x", nodes, true);
}
