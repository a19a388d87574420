// `aggsim sweep`: expand a sweep file, run its points locally or as a Slurm job array, merge results.
#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <thread>

#include "sim/cli/commands.hpp"
#include "sim/core/error.hpp"
#include "sim/core/terminal.hpp"
#include "sim/engine/simulation.hpp"
#include "sim/output/report.hpp"
#include "sim/output/run_folder.hpp"
#include "sim/scenario/scenario_loader.hpp"
#include "sim/sweep/local_runner.hpp"
#include "sim/sweep/slurm.hpp"

namespace aggsim::cli {

namespace {

namespace fs = std::filesystem;

// The sweep's folder, checked to be one aggsim may write into (new, empty or marked as a sweep's).
SweepFolder folder_for(const Sweep& sweep, const SweepOptions& options) {
  SweepFolder folder(options.out_dir.empty() ? sweep.default_out : options.out_dir);
  folder.check(options.file);
  return folder;
}

// A point id is 12 lowercase hex digits (see point_id): anything else, e.g. a path, is refused
// before it can name a file.
template <class Body>
void with_fs_errors(Body&& body) {
  try {
    body();
  } catch (const fs::filesystem_error& e) {
    throw path_error(e);
  }
}

// What every point's own `aggsim sweep run --point` gets: the command-line axes (so it finds the
// same points) and the SimGrid flags.
std::vector<std::string> child_args(const SweepOptions& options) {
  std::vector<std::string> args;
  for (const auto& g : options.extras.grid) args.push_back("--grid=" + g);
  for (const auto& s : options.extras.sets) args.push_back("--set=" + s);
  if (options.extras.repeat > 0) args.push_back("--repeat=" + std::to_string(options.extras.repeat));
  args.insert(args.end(), options.simgrid_args.begin(), options.simgrid_args.end());
  return args;
}

void check_point_id(const SweepOptions& options) {
  const std::string& id = options.point;
  if (id.size() != 12 || id.find_first_not_of("0123456789abcdef") != std::string::npos)
    throw InputError(fmt::format(
        "--point '{}': not a point id (12 hex digits, see manifest.csv written by 'aggsim sweep expand {}')",
        id, options.file));
}

// A point's scenario and its resolved.yaml text (computed once: its hash is the point's id).
struct PointScenario {
  Scenario scenario;
  std::string resolved;
};

// The point's scenario: its points/<id>.yaml when that still hashes to the id (no need to expand
// the whole sweep in every array task), else found by expanding the sweep.
PointScenario point_scenario(const SweepOptions& options, const SweepFolder& folder) {
  const fs::path file = folder.point_file(options.point);
  if (fs::is_regular_file(file)) {
    PointScenario point{load_scenario(file.string()), ""};
    point.resolved = resolved_yaml(point.scenario);
    if (point_id(point.resolved) == options.point) return point;
  }
  const Sweep sweep = expand_sweep(options.file, options.extras);
  for (const auto& p : sweep.points)
    if (p.id == options.point) {
      folder.write_expansion(sweep);
      PointScenario point{load_scenario(folder.point_file(p.id).string()), ""};
      point.resolved = resolved_yaml(point.scenario);
      return point;
    }
  throw InputError(
      fmt::format("{}: no point with id {} in this sweep (ids change when the sweep file changes; "
                  "see 'aggsim sweep expand')",
                  options.file, options.point));
}

int run_point(const SweepOptions& options) {
  stop_with_sweep_parent();
  check_point_id(options);
  const SweepFolder folder = folder_for(read_sweep_header(options.file, options.extras), options);
  if (folder.finished(options.point) && !options.force) {
    print_lines(stdout, "point {}: already finished ({})\n", options.point,
                folder.run_dir(options.point).string());
    return 0;
  }
  // Outside the failure record below: an id that is not a point of this sweep is no point's failure.
  const PointScenario point = point_scenario(options, folder);
  const Scenario& sc = point.scenario;
  if (const char* log = std::getenv("AGGSIM_TASK_LOG"))  // set by the Slurm script
    // Replaced by the real outcome unless the process is killed (time limit, memory): then the point
    // shows as failed, with the log to read, instead of pending.
    folder.record_failure(
        options.point,
        fmt::format("did not finish: killed (time limit, memory?) or still running; log: {}\n", log));
  try {
    RunFolderRequest run;
    run.dir = folder.run_dir(options.point);
    run.protect = {options.file};
    run.resolved_yaml = point.resolved;
    run.replace_different = true;  // the id names the scenario; an unfinished or --force point is rerun
    prepare_run_folder(run);
    const SimulationResult result = simulate(sc, options.simgrid_args);
    write_run_folder(run, run_outputs(sc, result, step_summaries(result), run.resolved_yaml));
    folder.clear_failure(options.point);
  } catch (const std::exception& e) {
    try {
      folder.record_failure(options.point, fmt::format("aggsim: error: {}\n", e.what()));
    } catch (const std::exception&) {  // e.g. a full disk: the error below still reaches stderr
    }
    throw;
  }
  return 0;
}

int finish(const Sweep& sweep, const SweepFolder& folder, int failures) {
  const std::string counts = folder.merge(sweep);
  print_lines(stderr, "sweep {}: {}; results: {}\n", sweep.name, counts, folder.results_file().string());
  if (failures > 0)
    print_lines(stderr, "sweep {}: {} point(s) failed; their errors are in results.csv and {}/failed/\n",
                sweep.name, failures, folder.root().string());
  return failures > 0 ? 1 : 0;
}

}  // namespace

int sweep_command(const SweepOptions& given_options) {
  SweepOptions options = given_options;
  options.file = locate_scenario(options.file, "sweep");
  if (options.verb == "run" && (options.point_given || !options.point.empty())) return run_point(options);

  const Sweep sweep = expand_sweep(options.file, options.extras);
  for (const auto& note : sweep.notes) print_lines(stderr, "aggsim: note: {}\n", note);
  const SweepFolder folder = folder_for(sweep, options);
  if (options.verb == "expand") {
    folder.write_expansion(sweep);
    print_lines(stdout, "sweep {}: {} points ({} swept keys) -> {}/manifest.csv\n", sweep.name,
                sweep.points.size(), sweep.keys.size(), folder.root().string());
    return 0;
  }
  if (options.verb == "merge") {
    int failed = 0;
    for (const auto& p : sweep.points)
      failed += !folder.finished(p.id) && (folder.failed(p.id) || folder.damaged(p.id));
    return finish(sweep, folder, failed);
  }
  if (options.verb == "slurm") {
    SlurmOptions slurm;
    slurm.chunk = options.chunk;
    slurm.partition = options.partition;
    slurm.time = options.time;
    slurm.mem = options.mem;
    slurm.account = options.account;
    slurm.max_running = options.max_running;
    slurm.sbatch_lines = options.sbatch_lines;
    slurm.merge_job = options.merge_job;
    slurm.exe = self_executable();
    slurm.extra_args = child_args(options);
    slurm.max_array_size = slurm_max_array_size();
    const SlurmScript script =
        sbatch_script(sweep, folder, slurm);  // checks the options: nothing written yet
    folder.write_expansion(sweep);
    const fs::path dir = folder.root() / "slurm";
    const fs::path file = dir / (script.file_stem + ".sbatch");
    write_file_atomic(file, script.text);
    with_fs_errors([&] { fs::create_directories(dir / "logs"); });
    if (script.chunk > options.chunk)
      print_lines(stdout, "note: {} points per array task to stay within MaxArraySize={}\n", script.chunk,
                  slurm.max_array_size);
    print_lines(stdout, "{}\n  {} points in {} array tasks\n", file.string(), sweep.points.size(),
                script.tasks);
    if (options.merge_job) {
      write_file_atomic(dir / (script.file_stem + "-merge.sbatch"), script.merge_text);
      write_file_atomic(dir / "submit.sh", script.submit_text);
      with_fs_errors([&] {
        fs::permissions(dir / "submit.sh",
                        fs::perms::owner_exec | fs::perms::group_exec | fs::perms::others_exec,
                        fs::perm_options::add);
      });
      print_lines(stdout, "  submit the array and its merge job with: {}\n", (dir / "submit.sh").string());
    } else {
      print_lines(stdout, "  submit with: sbatch {}\n  then: aggsim sweep merge {} --out {}\n", file.string(),
                  options.file, folder.root().string());
    }
    return 0;
  }
  // run
  folder.write_expansion(sweep);
  const RunnerLock lock(folder);  // before removing temporaries: another runner's are not stale
  folder.remove_stale_temporaries();
  LocalRunOptions local;
  local.jobs =
      options.jobs > 0 ? options.jobs : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  local.exe = self_executable();
  local.extra_args = child_args(options);
  const LocalRunResult run = run_sweep_locally(sweep, folder, local);
  const int code = finish(sweep, folder, run.failed);
  return run.interrupted ? 130 : code;
}

}  // namespace aggsim::cli
