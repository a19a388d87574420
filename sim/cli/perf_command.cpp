#include "sim/cli/perf_command.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <thread>

#include "sim/calibrate/perf.hpp"
#include "sim/cli/commands.hpp"
#include "sim/core/error.hpp"
#include "sim/core/units.hpp"
#include "sim/output/output_file.hpp"
#include "sim/sweep/local_runner.hpp"

namespace aggsim::cli {

namespace fs = std::filesystem;

CLI::App* add_perf_verb(CLI::App& app, PerfCommandOptions& o) {
  CLI::App* cmd = app.add_subcommand(
      "perf", "print nccl-tests' table (size, time, algbw, busbw) for the scenario's simulated cluster");
  cmd->add_option("scenario", o.scenario, "scenario naming the platform, ranks and algorithm")->required();
  cmd->add_option("--set", o.overrides, "override a scenario key, e.g. --set ranks=64")
      ->allow_extra_args(false);
  cmd->add_option("--collective", o.collective, "all_reduce | all_gather | reduce_scatter | broadcast")
      ->capture_default_str();
  cmd->add_option("--min", o.min, "smallest size (nccl-tests -b)")->capture_default_str();
  cmd->add_option("--max", o.max, "largest size (nccl-tests -e)")->capture_default_str();
  cmd->add_option("--factor", o.factor, "size multiplier between rows (nccl-tests -f)")
      ->capture_default_str();
  cmd->add_option("--csv", o.csv,
                  "also write collective,ranks,nodes,bytes,count,time_s,algbw_GBps,busbw_GBps");
  cmd->add_option("-j,--jobs", o.jobs, "simulations run at once (default: one per CPU)")
      ->check(CLI::Range(1, 4096));
  return cmd;
}

int perf_command(const PerfCommandOptions& o) {
  PerfOptions p;
  p.scenario = locate_scenario(o.scenario);  // as `run` finds it: a bare name is a shipped scenario
  p.overrides = o.overrides;
  p.collective = o.collective;
  const auto bytes = [](const std::string& option, const std::string& text) {
    try {
      return units::parse_bytes(text);
    } catch (const std::invalid_argument& e) {
      throw InputError(fmt::format("{}: {}", option, e.what()));
    }
  };
  p.min_bytes = bytes("--min", o.min);
  p.max_bytes = bytes("--max", o.max);
  p.factor = o.factor;
  p.simgrid_args = o.simgrid_args;
  p.exe = self_executable();
  p.jobs = o.jobs > 0 ? o.jobs : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  const std::vector<fs::path> inputs = {p.scenario};
  if (!o.csv.empty()) prepare_output_file(o.csv, "--csv", inputs);  // before any simulation
  const PerfTable table = perf(p);
  fmt::print("{}", perf_text(table));
  if (!o.csv.empty()) write_output_file(o.csv, "--csv", perf_csv(table), inputs);
  return 0;
}

}  // namespace aggsim::cli
