#pragma once
// The `aggsim` verbs. Each returns the process exit code; input problems throw InputError.
#include <string>
#include <vector>

namespace aggsim::cli {

struct RunOptions {
  std::string scenario;
  std::string out_dir;                    // empty: the scenario's output.dir, else out/<name>
  std::vector<std::string> overrides;     // --set key.path=value
  std::vector<std::string> simgrid_args;  // --cfg=..., --log=...
  bool quiet = false;
};

int run_command(const RunOptions& options);
int validate_command(const RunOptions& options);
int list_command();
int bench_command(const std::vector<std::string>& args);

}  // namespace aggsim::cli
