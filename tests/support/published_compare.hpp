#pragma once
// `aggsim compare` of a named system, uncalibrated, with a published all-reduce log of
// tests/data/calibration (sources in tests/data/README.md): what the published-run tests read.
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <map>
#include <string>
#include <vector>

#include "support/cli.hpp"
#include "support/csv.hpp"

namespace aggsim::test {

// The compare CSV's rows (bytes, measured_s, simulated_s, ...) of `platform: {system: SYSTEM, nodes:
// NODES}` with `ranks` ranks of nccl_allreduce against tests/data/calibration/LOG_all_reduce.log;
// `settings`: more keys of nccl_allreduce ("nvls: off"), the run's NCCL environment;
// `platform_settings`: more platform keys beside `system` ("nics_per_node: 8"), where the run's
// machine differs from the named system.
inline std::vector<std::map<std::string, std::string>> compare_system_with_log(
    const std::string& system, int nodes, int ranks, const std::string& log, const std::string& settings = "",
    const std::string& platform_settings = "") {
  const auto dir = fresh_dir("system-published");
  write_file(
      dir / "s.yaml",
      fmt::format("name: {}\nranks: {}\nsteps: 1\nplatform: {{system: {}, nodes: {}{}}}\n"
                  "model: {{size: 1MB, math: off}}\nalgorithm: {{name: nccl_allreduce{}}}\n",
                  system, ranks, system, nodes, platform_settings.empty() ? "" : ", " + platform_settings,
                  settings.empty() ? "" : ", " + settings));
  const std::string file =
      std::string(AGGSIM_SOURCE_DIR) + "/tests/data/calibration/" + log + "_all_reduce.log";
  // The shape always: logs without rank lines, or whose posters shortened the list with "...",
  // need it, and compare checks it against the rank lines a log shows.
  const std::vector<std::string> args = {
      "compare", "s.yaml", file, "--csv", "c.csv", "--shape", fmt::format("{}={}x{}", file, ranks, nodes)};
  const auto r = run_aggsim(args, dir);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  auto rows = read_csv_rows(read_file(dir / "c.csv"));
  std::filesystem::remove_all(dir);
  return rows;
}

}  // namespace aggsim::test
