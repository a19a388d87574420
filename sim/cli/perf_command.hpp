#pragma once
// `aggsim perf`: nccl-tests' table for the scenario's cluster (sim/calibrate/perf.hpp).
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace aggsim::cli {

struct PerfCommandOptions {
  std::string scenario;
  std::vector<std::string> overrides;
  std::string collective = "all_reduce";
  std::string min = "8B", max = "8GiB";
  double factor = 2;
  std::string csv;
  int jobs = 0;
  std::vector<std::string> simgrid_args;
};

CLI::App* add_perf_verb(CLI::App& app, PerfCommandOptions& options);
int perf_command(const PerfCommandOptions& options);

}  // namespace aggsim::cli
