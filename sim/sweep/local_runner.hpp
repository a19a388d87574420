#pragma once
// Runs a sweep's points on this machine, each in its own child process (SimGrid allows one Engine
// per process): the aggsim binary itself, as `aggsim sweep run FILE --point ID --out DIR`
// (sim/sweep/child_process.hpp).
#include <string>
#include <vector>

#include "sim/sweep/child_process.hpp"
#include "sim/sweep/sweep.hpp"
#include "sim/sweep/sweep_folder.hpp"

namespace aggsim {

struct LocalRunOptions {
  int jobs = 1;
  std::string exe;                      // the aggsim binary
  std::vector<std::string> extra_args;  // appended to every child's command line (SimGrid flags)
};

struct LocalRunResult {
  int failed = 0;            // points that failed in this run
  bool interrupted = false;  // SIGINT/SIGTERM: running children were stopped
};

// Runs every point that is not finished yet, at most `jobs` at once, recording failures (stderr)
// in the folder.
LocalRunResult run_sweep_locally(const Sweep& sweep, const SweepFolder& folder,
                                 const LocalRunOptions& options);

}  // namespace aggsim
