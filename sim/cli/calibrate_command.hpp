#pragma once
// `aggsim calibrate` and `aggsim compare` (see sim/calibrate/README.md).
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace aggsim::cli {

struct MeasuredOptions {
  std::string scenario;
  std::vector<std::string> measurements;
  std::vector<std::string> overrides;  // --set key.path=value, for the scenario and every simulation
  std::string out;                     // calibrate: the calibration file
  std::string csv;                     // compare: also write the rows as CSV
  std::string breaks;                  // calibrate: factor step boundaries, e.g. "4KiB,64KiB,1MiB"
  std::string collective;              // --collective, for logs that do not name theirs
  std::vector<std::string> shapes;     // --shape FILE=RANKSxNODES, repeatable
  int ranks = 0, nodes = 0, jobs = 0;
  std::vector<std::string> simgrid_args;
};

// Adds both verbs to `app`; the returned pointers tell which one was chosen.
std::pair<CLI::App*, CLI::App*> add_measured_verbs(CLI::App& app, MeasuredOptions& options);

int calibrate_command(const MeasuredOptions& options);
int compare_command(const MeasuredOptions& options);

}  // namespace aggsim::cli
