#pragma once
// Runs one scenario at many measured points, each simulation in its own child process (SimGrid
// allows one Engine per process): `aggsim run SCENARIO -q --out DIR --set ...`, at most `jobs` at
// once, and reads each child's simulated time from its summary.json.
#include <cstddef>
#include <string>
#include <vector>

namespace aggsim {

struct PointRunOptions {
  std::string exe;                        // the aggsim binary
  std::string scenario;                   // scenario file
  std::vector<std::string> simgrid_args;  // --cfg=..., --log=... for every child
  int jobs = 1;
};

// The most distinct simulations one command runs (perf, calibrate, compare); points with the same
// overrides are one simulation.
constexpr std::size_t kMaxPointRuns = 10000;

// sets[i] are the --set overrides of point i; returns each point's time, in order: its one call's
// (summary.json's collective_time_s), or its step's (sim_time_s) when it made several (points with
// equal overrides are simulated once). More than kMaxPointRuns distinct ones: InputError. A child
// that rejects its input raises InputError with the child's message; any other failure runtime_error.
// `choices` (if given) receives each point's NCCL algorithm/protocol ("ring/simple"; most calls'),
// empty for algorithms that choose none.
// SIGINT, SIGTERM or SIGHUP meanwhile: the children are stopped and Interrupted is thrown.
std::vector<double> run_points(const PointRunOptions& options,
                               const std::vector<std::vector<std::string>>& sets,
                               std::vector<std::string>* choices = nullptr);

}  // namespace aggsim
