#pragma once
// The `aggsim` verbs. Each returns the process exit code; input problems throw InputError.
#include <string>
#include <vector>

#include "sim/sweep/sweep.hpp"

namespace aggsim::cli {

struct RunOptions {
  std::string scenario;
  std::string out_dir;                    // empty: the scenario's output.dir, else out/<name>
  std::vector<std::string> overrides;     // --set key.path=value
  std::vector<std::string> simgrid_args;  // --cfg=..., --log=...
  bool quiet = false;
  bool force = false;  // replace a run folder holding a different scenario's run
  // Heartbeat on stderr: on when stderr is a terminal, unless --progress / --no-progress say.
  bool progress = false;
  bool no_progress = false;
  double progress_interval_s = 2;
};

// `aggsim sweep expand | run | slurm | merge` (see scenarios/README.md).
struct SweepOptions {
  std::string verb;
  std::string file;
  std::string out_dir;  // empty: the sweep block's out, else out/<name>
  std::string point;    // run: only this point (as a Slurm array task does)
  bool point_given = false;
  int jobs = 0;                               // run: parallel points; 0: one per CPU
  int chunk = 1;                              // slurm: points per array task
  std::string partition, time, mem, account;  // slurm: #SBATCH options
  int max_running = 0;                        // slurm: array tasks at once (%M)
  std::vector<std::string> sbatch_lines;      // slurm: extra #SBATCH options
  bool merge_job = false;                     // slurm: also a merge job after the array
  bool force = false;                         // run --point: run again even if finished
  SweepExtras extras;  // --grid key=v1,v2 and --repeat N: axes beside (or instead of) the sweep block
  std::vector<std::string> simgrid_args;
};

// `aggsim bench`: a ring all-reduce step at scale beside a bare SimGrid program.
struct BenchOptions {
  int ranks = 1024;
  // 100 MiB splits into equal fp32 chunks for any power-of-two rank count. With 10^8 bytes chunk
  // sizes differ by one element, and LV08's reverse crosstraffic then makes SimGrid's solver cost
  // grow as p^3 (the same for the bare program): see tests/bench/README.md.
  std::string size = "100MiB";
  int repeat = 1;
  std::string reference;  // empty: the bare SimGrid program built beside aggsim
  std::string network = "lv08";
};

// A scenario or sweep file named on the command line: as given, else in the data folder, where a
// bare name names a shipped scenario (sim/core/data_files.hpp). Throws InputError listing where it
// looked.
std::string locate_scenario(const std::string& given, const std::string& what = "scenario");

// The environment variables every command may read, checked before any runs, each named in its
// error (AGGSIM_SPAWN; TMPDIR is checked where a command needs it). Throws InputError.
void check_environment();

int run_command(const RunOptions& options);
int sweep_command(const SweepOptions& options);
int validate_command(const RunOptions& options);
// `aggsim list [--keys | --outputs] [--markdown]`.
struct ListOptions {
  bool keys = false;      // every scenario key with type, default and meaning (scenarios/KEYS.md)
  bool outputs = false;   // every output column (sim/output/COLUMNS.md)
  bool systems = false;   // the named systems with their values and sources (platforms/SYSTEMS.md)
  bool markdown = false;  // as the Markdown reference
};
int list_command(const ListOptions& options = {});
int bench_command(const BenchOptions& options);

}  // namespace aggsim::cli
