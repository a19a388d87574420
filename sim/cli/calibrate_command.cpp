#include "sim/cli/calibrate_command.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <thread>

#include "sim/calibrate/calibrate.hpp"
#include "sim/cli/commands.hpp"
#include "sim/core/error.hpp"
#include "sim/core/strings.hpp"
#include "sim/core/terminal.hpp"
#include "sim/core/units.hpp"
#include "sim/output/output_file.hpp"
#include "sim/sweep/local_runner.hpp"

namespace aggsim::cli {

namespace fs = std::filesystem;

namespace {

void add_common(CLI::App* cmd, MeasuredOptions& o) {
  cmd->add_option("scenario", o.scenario, "scenario naming the platform and the algorithm measured")
      ->required();
  cmd->add_option("measurements", o.measurements, "nccl-tests, OSU or CSV logs")->required();
  cmd->add_option("--set", o.overrides, "override a scenario key, e.g. --set calibration=cal.yaml")
      ->allow_extra_args(false);
  cmd->add_option("--ranks", o.ranks, "ranks of logs that do not print them (osu_allreduce)")
      ->check(CLI::Range(1, 1 << 22));
  cmd->add_option("--nodes", o.nodes, "nodes of logs that do not print them (OSU: default one rank per node)")
      ->check(CLI::Range(1, 1 << 22));
  cmd->add_option("--collective", o.collective,
                  "collective of nccl-tests logs that do not name it: all_reduce | all_gather | "
                  "reduce_scatter | broadcast | sendrecv");
  cmd->add_option("--shape", o.shapes,
                  "ranks and nodes of one measurement file, e.g. --shape one_node.log=8x1 (repeatable; "
                  "overrides --ranks/--nodes for that file)")
      ->allow_extra_args(false);
  cmd->add_option("-j,--jobs", o.jobs, "simulations run at once (default: one per CPU)")
      ->check(CLI::Range(1, 4096));
}

std::string checked_collective(const std::string& given) {
  return given.empty() ? given : collective_option(given);  // empty: not given, the logs say
}

// A whole number from 1 to 2^22 (the ranks aggsim simulates), or 0.
int shape_count(const std::string& text) {
  if (text.empty() || text.size() > 7 || text.find_first_not_of("0123456789") != std::string::npos) return 0;
  const int value = std::stoi(text);
  return value <= (1 << 22) ? value : 0;
}

// --shape FILE=RANKSxNODES, split at the last '=' (a path may hold '='); FILE must be one of the
// measurement files, as given or as the same path written otherwise ("./a.log" for "a.log").
std::map<std::string, MeasurementShape> checked_shapes(const MeasuredOptions& o) {
  std::map<std::string, MeasurementShape> shapes;
  for (const std::string& text : o.shapes) {
    const auto eq = text.rfind('=');
    if (eq == std::string::npos || eq == 0)
      throw InputError(
          fmt::format("--shape: '{}': expected FILE=RANKSxNODES, e.g. --shape one_node.log=8x1", text));
    const std::string file = text.substr(0, eq), shape = text.substr(eq + 1);
    const auto x = shape.find_first_of("xX");
    const int ranks = x == std::string::npos ? 0 : shape_count(shape.substr(0, x));
    const int nodes = x == std::string::npos ? 0 : shape_count(shape.substr(x + 1));
    if (ranks == 0 || nodes == 0)
      throw InputError(fmt::format(
          "--shape: '{}': '{}' is not RANKSxNODES with whole numbers from 1 to 4194304, e.g. 16x2", text,
          shape));
    if (nodes > ranks)
      throw InputError(fmt::format("--shape: '{}': {} nodes for {} ranks: a node holds at least one rank",
                                   text, nodes, ranks));
    std::string match;
    for (const auto& m : o.measurements)
      if (m == file) match = m;
    if (match.empty())
      for (const auto& m : o.measurements)
        if (fs::path(m).lexically_normal() == fs::path(file).lexically_normal()) match = m;
    if (match.empty())
      throw InputError(fmt::format("--shape: '{}': {} is not one of the measurement files given{}", text,
                                   file, did_you_mean(file, o.measurements)));
    if (const auto seen = shapes.find(match); seen != shapes.end())
      throw InputError(
          fmt::format("--shape: '{}': {} already has a shape ({})", text, match, seen->second.option));
    shapes[match] = {ranks, nodes, "--shape " + text};
  }
  return shapes;
}

MeasuredRunOptions run_options(const MeasuredOptions& o) {
  MeasuredRunOptions r;
  r.scenario = locate_scenario(o.scenario);  // as `run` finds it: a bare name is a shipped scenario
  r.measurement_files = o.measurements;
  r.overrides = o.overrides;
  r.defaults.ranks = o.ranks;
  r.defaults.nodes = o.nodes;
  r.defaults.collective = checked_collective(o.collective);
  r.shapes = checked_shapes(o);
  r.simgrid_args = o.simgrid_args;
  r.exe = self_executable();
  r.jobs = o.jobs > 0 ? o.jobs : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  return r;
}

// The inputs an output file must never replace.
std::vector<fs::path> inputs_of(const MeasuredOptions& o) {
  std::vector<fs::path> inputs = {locate_scenario(o.scenario)};
  inputs.insert(inputs.end(), o.measurements.begin(), o.measurements.end());
  return inputs;
}

fs::path report_path(const fs::path& out) {
  fs::path report = out;
  return report.replace_extension(".report.txt");
}

}  // namespace

std::pair<CLI::App*, CLI::App*> add_measured_verbs(CLI::App& app, MeasuredOptions& o) {
  CLI::App* calibrate =
      app.add_subcommand("calibrate", "fit the platform's latency/bandwidth factors to measurements");
  add_common(calibrate, o);
  calibrate->add_option("--out", o.out, "calibration file to write (its report goes beside it, .report.txt)")
      ->required();
  calibrate->add_option("--breaks", o.breaks,
                        "message sizes where the piecewise factors change (default 4KiB,64KiB,1MiB,16MiB)");
  CLI::App* compare =
      app.add_subcommand("compare", "simulate every measured point and print both side by side");
  add_common(compare, o);
  compare->add_option("--csv", o.csv,
                      "also write collective,ranks,nodes,bytes,measured_s,simulated_s,rel_error");
  return {calibrate, compare};
}

int calibrate_command(const MeasuredOptions& o) {
  const MeasuredRunOptions run = run_options(o);  // option errors before any work
  std::vector<std::uint64_t> edges = default_factor_edges();
  if (!o.breaks.empty()) {
    edges.clear();
    for (const std::string& part : split_list(o.breaks)) {
      try {
        edges.push_back(units::parse_bytes(part));
      } catch (const std::invalid_argument& e) {
        throw InputError(fmt::format("--breaks {}: {}", o.breaks, e.what()));
      }
      if (edges.back() == 0 || (edges.size() > 1 && edges.back() <= edges[edges.size() - 2]))
        throw InputError(fmt::format("--breaks {}: sizes must be positive and increasing", o.breaks));
    }
  }
  const fs::path out = o.out, report = report_path(out);
  const std::vector<fs::path> inputs = inputs_of(o);
  prepare_output_file(out, "--out", inputs);  // before any simulation
  prepare_output_file(report, "--out (its report)", inputs);
  const CalibrationResult result = calibrate(run, edges);
  write_output_file(out, "--out", result.calibration_yaml, inputs);
  write_output_file(report, "--out (its report)", result.report, inputs);
  print_lines(stdout, "{}wrote {} and {}\n", result.report, out.string(), report.string());
  return 0;
}

int compare_command(const MeasuredOptions& o) {
  const MeasuredRunOptions run = run_options(o);                          // option errors before any work
  if (!o.csv.empty()) prepare_output_file(o.csv, "--csv", inputs_of(o));  // before any simulation
  const auto points = compare(run);
  print_lines(stdout, "{}", comparison_table(points));
  if (!o.csv.empty()) write_output_file(o.csv, "--csv", comparison_csv(points), inputs_of(o));
  return 0;
}

}  // namespace aggsim::cli
