#pragma once
// A Slurm job array for a sweep: array task t runs its share of the points, each as
// `aggsim sweep run FILE --point ID --out DIR`, so finished points are skipped on resubmission
// and the results merge as for a local run (`aggsim sweep merge FILE`).
//
// The script is built to be safe whatever the scenario says: every path and argument in its shell
// part is single-quoted, the point list holds only hex ids, the job name keeps only [A-Za-z0-9_.-],
// and every value that goes on a #SBATCH line (which cannot be quoted) is checked against Slurm's
// syntax or refused with an InputError.
#include <string>
#include <vector>

#include "sim/sweep/sweep.hpp"
#include "sim/sweep/sweep_folder.hpp"

namespace aggsim {

struct SlurmOptions {
  int chunk = 1;          // points per array task (raised when the array would exceed MaxArraySize)
  std::string partition;  // empty: the cluster's default
  std::string time;       // per array task, e.g. 00:30:00; empty: the partition's default
  std::string mem;        // --mem per array task, e.g. 4G; empty: the cluster's default
  std::string account;    // --account; empty: the user's default
  int max_running = 0;    // array tasks running at once (--array=0-N%M); 0: no limit
  std::vector<std::string> sbatch_lines;  // extra #SBATCH options, e.g. "--gres=gpu:1"
  bool merge_job = false;                 // also a merge job run after the array (afterany)
  std::string exe;                        // absolute path of aggsim
  std::string workdir;                    // where the points run (relative paths in the sweep)
  std::vector<std::string> extra_args;    // appended to every point's command line (SimGrid flags)
  int max_array_size = 1001;              // Slurm's MaxArraySize: array indices must stay below it
};

struct SlurmScript {
  std::string text;         // the job array (sbatch)
  std::string merge_text;   // the merge job (sbatch), when merge_job
  std::string submit_text;  // submits both, the merge job after the array (afterany), when merge_job
  std::string job_name;     // aggsim-<name>, reduced to characters a #SBATCH line can hold
  std::string file_stem;    // <name> reduced so: slurm/<stem>.sbatch, slurm/<stem>-merge.sbatch
  int tasks = 0;
  int chunk = 1;
  std::vector<std::vector<int>> task_points;  // point indices of each array task
};

// Throws InputError when an option cannot go into an sbatch script (wrong Slurm syntax, a newline).
SlurmScript sbatch_script(const Sweep& sweep, const SweepFolder& folder, const SlurmOptions& options);

// Splits points with these costs into `tasks` groups of at most `chunk` points each, heaviest
// first onto the lightest group, so no task gets all the heavy points.
std::vector<std::vector<int>> balance_points(const std::vector<double>& costs, int tasks, int chunk);

// True for Slurm's time formats: M, M:S, H:M:S, D-H, D-H:M, D-H:M:S, UNLIMITED, INFINITE.
bool valid_slurm_time(const std::string& time);

// MaxArraySize from `scontrol show config`, or Slurm's default 1001 when scontrol is unavailable.
int slurm_max_array_size();

}  // namespace aggsim
