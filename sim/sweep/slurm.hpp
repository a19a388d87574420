#pragma once
// A Slurm job array for a sweep: array task t runs points [t*chunk, (t+1)*chunk) of the manifest,
// each as `aggsim sweep run FILE --point ID --out DIR`, so finished points are skipped on resubmission
// and the results merge as for a local run (`aggsim sweep merge FILE`).
#include <string>
#include <vector>

#include "sim/sweep/sweep.hpp"
#include "sim/sweep/sweep_folder.hpp"

namespace aggsim {

struct SlurmOptions {
  int chunk = 1;          // points per array task (raised when the array would exceed MaxArraySize)
  std::string partition;  // empty: the cluster's default
  std::string time;       // per array task, e.g. 00:30:00; empty: the partition's default
  std::string exe;        // absolute path of aggsim
  std::vector<std::string> extra_args;  // appended to every point's command line (SimGrid flags)
  int max_array_size = 1001;            // Slurm's MaxArraySize: array indices must stay below it
};

struct SlurmScript {
  std::string text;
  int tasks = 0;
  int chunk = 1;
};

SlurmScript sbatch_script(const Sweep& sweep, const SweepFolder& folder, const SlurmOptions& options);

// MaxArraySize from `scontrol show config`, or Slurm's default 1001 when scontrol is unavailable.
int slurm_max_array_size();

}  // namespace aggsim
