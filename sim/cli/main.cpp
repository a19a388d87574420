// aggsim: simulate gradient aggregation on a network. See README.md.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <iostream>
#include <system_error>
#include <simgrid/s4u/Engine.hpp>
#include <tuple>

#include "sim/cli/calibrate_command.hpp"
#include "sim/cli/commands.hpp"
#include "sim/cli/option_errors.hpp"
#include "sim/cli/perf_command.hpp"
#include "sim/core/error.hpp"
#include "sim/output/run_folder.hpp"
#include "sim/platform/ns3_environment.hpp"
#include "sim/sweep/child_process.hpp"

#ifdef AGGSIM_MIMALLOC
// C++ new and delete straight to mimalloc, for SimGrid's objects too (see CMakeLists.txt).
#include <mimalloc-new-delete.h>
#include <mimalloc.h>
#endif

namespace {

// SimGrid's own --cfg=... and --log=... flags pass through untouched; CLI11 sees the rest.
std::vector<std::string> take_simgrid_args(std::vector<std::string>& args) {
  std::vector<std::string> simgrid, rest;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a.rfind("--cfg=", 0) == 0 || a.rfind("--log=", 0) == 0) {
      simgrid.push_back(a);
    } else if ((a == "--cfg" || a == "--log") && i + 1 < args.size()) {
      simgrid.push_back(a + "=" + args[++i]);
    } else {
      rest.push_back(a);
    }
  }
  args = rest;
  return simgrid;
}

// SimGrid's help flags (--cfg=help or --help-cfg, which SimGrid spells --help; --log=help or
// --help-logs; --help-models, ...): SimGrid prints the help and exits 0 while creating its engine,
// before any scenario is needed.
void show_simgrid_help_if_asked(const std::vector<std::string>& args,
                                const std::vector<std::string>& simgrid) {
  std::string flag;
  for (const auto& a : simgrid) {
    if (a == "--cfg=help") flag = "--help";  // SimGrid's own name for its configuration help
    if (a == "--log=help") flag = "--help-logs";
  }
  for (const auto& a : args) {
    if (a == "--help-cfg") flag = "--help";
    if (a == "--help-logs" || a == "--help-log-categories" || a == "--help-models" || a == "--help-aliases" ||
        a == "--help-tracing")
      flag = a;
  }
  if (flag.empty()) return;
  std::string program = "aggsim";
  std::vector<char*> argv = {program.data(), flag.data(), nullptr};
  int argc = 2;
  simgrid::s4u::Engine engine(&argc, argv.data());
  std::exit(0);  // not reached for the flags above (SimGrid exits); harmless otherwise
}

// The allocator that serves malloc in this process, as `--version` reports it: whether the
// build's allocator really took over (it must come before the C library when the program is linked).
std::string allocator_in_use() {
#ifdef AGGSIM_MIMALLOC
  const int v = mi_version();
  const std::string mimalloc = fmt::format("mimalloc {}.{}.{}", v / 100, v / 10 % 10, v % 10);
  void* probe = std::malloc(64);
  const bool active = mi_is_in_heap_region(probe);
  std::free(probe);
  return active ? mimalloc : fmt::format("not {}, which is linked but does not serve malloc", mimalloc);
#else
  return "the C library's malloc";
#endif
}

// `run` and `validate`: the verbs that take one scenario (and --set overrides of its keys).
std::pair<CLI::App*, CLI::App*> add_scenario_verbs(CLI::App& app, aggsim::cli::RunOptions& options) {
  auto add_scenario_options = [&](CLI::App* cmd) {
    cmd->add_option("scenario", options.scenario, "scenario YAML file")->required();
    cmd->add_option("--set", options.overrides, "override a key, e.g. --set ranks=64 --set algorithm.op=sum")
        ->allow_extra_args(false);
  };
  CLI::App* run = app.add_subcommand("run", "run one simulation and write its output folder");
  add_scenario_options(run);
  run->add_option("--out", options.out_dir, "output folder (default: output.dir, else out/<scenario name>)");
  run->add_flag("-q,--quiet", options.quiet, "print nothing on success (no start line, no heartbeat)");
  CLI::Option* progress = run->add_flag(
      "--progress", options.progress,
      "print a heartbeat on stderr even when stderr is not a terminal (it is on for terminals)");
  run->add_flag("--no-progress", options.no_progress, "no heartbeat, even on a terminal")->excludes(progress);
  run->add_option("--progress-interval", options.progress_interval_s,
                  "seconds of wall time between heartbeat lines (0: at every check)")
      ->check(CLI::Range(0.0, 86400.0))
      ->capture_default_str();
  run->add_flag("--force", options.force,
                "replace the output folder even if it holds a different scenario's run");
  CLI::App* validate = app.add_subcommand("validate", "check a scenario and its platform without running it");
  add_scenario_options(validate);
  return {run, validate};
}

CLI::App* add_list_verb(CLI::App& app, aggsim::cli::ListOptions& list_options) {
  CLI::App* list = app.add_subcommand("list", "list algorithms, compressors, topologies and network presets");
  CLI::Option* list_keys =
      list->add_flag("--keys", list_options.keys,
                     "every scenario key with its type, default and meaning (scenarios/KEYS.md)");
  list->add_flag(
          "--outputs", list_options.outputs,
          "every column of steps.csv, collectives.csv, summary.json, results.csv (sim/output/COLUMNS.md)")
      ->excludes(list_keys);
  list->add_flag("--systems", list_options.systems,
                 "the named systems (platform.system) with their values and sources (platforms/SYSTEMS.md)")
      ->excludes(list_keys);
  list->add_flag("--markdown", list_options.markdown,
                 "with --keys, --outputs or --systems: print the Markdown reference");
  return list;
}

// `sweep` and its verbs (expand, run, slurm, merge); also the --point option, whose presence the
// sweep command needs to know.
std::pair<CLI::App*, CLI::Option*> add_sweep_verbs(CLI::App& app, aggsim::cli::SweepOptions& sweep_options) {
  CLI::App* sweep = app.add_subcommand("sweep", "expand, run (locally or on Slurm) and merge a sweep file");
  sweep->require_subcommand(1);
  auto add_sweep_verb = [&](const std::string& verb, const std::string& help) {
    CLI::App* cmd = sweep->add_subcommand(verb, help);
    cmd->add_option("sweep_file", sweep_options.file, "sweep YAML file (a scenario with a sweep: block)")
        ->required();
    cmd->add_option("--out", sweep_options.out_dir, "output folder (default: sweep.out, else out/<name>)");
    cmd->add_option("--grid", sweep_options.extras.grid,
                    "sweep a key over values, e.g. --grid ranks=8,16,32 (repeatable; works on any scenario)")
        ->allow_extra_args(false);
    cmd->add_option("--set", sweep_options.extras.sets,
                    "override a key at every point, e.g. --set steps=1 (repeatable; as for run)")
        ->allow_extra_args(false);
    cmd->add_option("--repeat", sweep_options.extras.repeat,
                    "runs per point, each with a seed derived from the scenario's (overrides repeat:)")
        ->check(CLI::Range(1, 100000));
    cmd->callback([&sweep_options, verb] { sweep_options.verb = verb; });
    return cmd;
  };
  add_sweep_verb("expand", "write every point's scenario and the manifest, checking each point");
  CLI::App* sweep_run =
      add_sweep_verb("run", "run the unfinished points in parallel child processes, then merge");
  sweep_run->add_option("-j,--jobs", sweep_options.jobs, "points run at once (default: one per CPU)")
      ->check(CLI::Range(1, 4096));
  CLI::Option* point = sweep_run->add_option("--point", sweep_options.point,
                                             "run only this point id (what a Slurm array task does)");
  sweep_run->add_flag("--force", sweep_options.force, "with --point: run it again even if it is finished");
  CLI::App* sweep_slurm =
      add_sweep_verb("slurm", "write an sbatch script running the points as a Slurm job array");
  sweep_slurm->add_option("--chunk", sweep_options.chunk, "points per array task (default 1)")
      ->check(CLI::Range(1, 1 << 20));
  sweep_slurm->add_option("--partition", sweep_options.partition, "Slurm partition");
  sweep_slurm->add_option("--time", sweep_options.time,
                          "time limit per array task in Slurm's format, e.g. 01:00:00 or 2-00:00:00");
  sweep_slurm->add_option("--mem", sweep_options.mem, "memory per array task, e.g. 4G");
  sweep_slurm->add_option("--account", sweep_options.account, "Slurm account to charge");
  sweep_slurm
      ->add_option("--max-running", sweep_options.max_running, "array tasks running at once (--array=0-N%M)")
      ->check(CLI::Range(1, 1 << 20));
  sweep_slurm
      ->add_option("--sbatch", sweep_options.sbatch_lines,
                   "an extra #SBATCH option, e.g. --sbatch=--gres=gpu:1 (repeatable)")
      ->allow_extra_args(false);
  sweep_slurm->add_flag(
      "--merge-job", sweep_options.merge_job,
      "also write a merge job and submit.sh, which submits it to run after the array (afterany)");
  add_sweep_verb("merge", "merge the finished points' summary.json into results.csv");
  return {sweep, point};
}

CLI::App* add_bench_verb(CLI::App& app, aggsim::cli::BenchOptions& bench_options) {
  CLI::App* bench = app.add_subcommand(
      "bench",
      "wall time, peak memory and message rate of a ring all-reduce step beside a bare SimGrid program");
  bench->add_option("--ranks", bench_options.ranks, "simulated ranks (one host each)")
      ->check(CLI::Range(2, 1 << 20))
      ->capture_default_str();
  bench->add_option("--size", bench_options.size, "modeled gradient size")->capture_default_str();
  bench
      ->add_option("--repeat", bench_options.repeat,
                   "runs per configuration; the one with the least CPU time is reported")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  bench->add_option("--reference", bench_options.reference,
                    "bare SimGrid reference program (default: bench_bare_ring built beside aggsim)");
  bench->add_option("--network", bench_options.network, "network preset")
      ->check(CLI::IsMember({"lv08", "alpha_beta"}))
      ->capture_default_str();
  return bench;
}

// A command line CLI11 refused (or --help, --version): the message and the exit code.
int report_parse_error(const CLI::App& app, const CLI::ParseError& e, CLI::App* sweep,
                       const std::vector<std::string>& args) {
  // `aggsim sweep` or `aggsim sweep FILE` without a verb: name the verbs (CLI11 only says one is
  // needed); a word that is no file (`aggsim sweep frob`) is a misspelt verb (option_error).
  const bool file_given = args.size() > 1 && std::filesystem::exists(args[1]);
  if (sweep->parsed() && sweep->get_subcommands().empty() && e.get_exit_code() != 0 &&
      (args.size() < 2 || file_given)) {
    std::string verbs;
    for (const CLI::App* verb : sweep->get_subcommands([](CLI::App*) { return true; }))
      verbs += (verbs.empty() ? "" : " | ") + verb->get_name();
    std::cerr << "aggsim: error: sweep: give a verb first: aggsim sweep " << verbs
              << " SWEEP.yaml (e.g. aggsim sweep run SWEEP.yaml --jobs 2; aggsim sweep --help lists them)\n";
    return 2;
  }
  if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
  std::cerr << "aggsim: error: " << aggsim::cli::option_error(e, args)
            << "\nRun with --help for more information.\n";
  return 2;
}

// Runs the chosen verb; what it throws becomes a message on stderr and the exit code: 2 for bad
// input, 1 for a failed simulation or an internal error, the signal's for an interruption.
int run_reporting_errors(const std::function<int()>& verb) {
  try {
    return verb();
  } catch (const aggsim::InputError& e) {
    std::cerr << "aggsim: error: " << e.what() << "\n";
    return 2;
  } catch (const std::filesystem::filesystem_error& e) {
    std::cerr << "aggsim: error: " << aggsim::path_error(e).what() << "\n";
    return 2;
  } catch (const aggsim::Interrupted& e) {
    std::signal(e.signal(), SIG_DFL);  // its temporaries are gone: end as the signal would have
    std::raise(e.signal());
    return 128 + e.signal();
  } catch (const aggsim::SimulationError& e) {
    std::cerr << "aggsim: error: " << e.what() << "\n";
    return 1;
  } catch (const std::system_error& e) {  // e.g. fmt's "cannot write to file" on a full device
    if (std::ferror(stdout))
      std::cerr << "aggsim: error: cannot write to standard output: " << e.code().message() << "\n";
    else
      std::cerr << "aggsim: error: " << aggsim::printable(e.what()) << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "aggsim: internal error: " << aggsim::printable(e.what()) << "\n";
    return 1;
  }
}

// The whole program; child processes forked by sweeps and calibrations call it too
// (sim/sweep/child_process.hpp).
int aggsim_main(int argc, char** argv) {
  aggsim::remember_program_arguments(argv);  // for the re-execution ns-3 runs need (see there)
  std::vector<std::string> args(argv + 1, argv + argc);
  aggsim::cli::RunOptions options;
  options.simgrid_args = take_simgrid_args(args);
  show_simgrid_help_if_asked(args, options.simgrid_args);

  CLI::App app{"aggsim: discrete-event simulation of gradient aggregation in distributed training", "aggsim"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::function<std::string()>([] {  // probes the allocator only when asked
                         return fmt::format("aggsim {}, allocator: {}", AGGSIM_VERSION, allocator_in_use());
                       }));
  app.footer(
      "SimGrid flags (--cfg=..., --log=...) are passed through to SimGrid; --cfg=help and --log=help list "
      "them.");

  // Plain variables, not structured bindings: the lambda below captures them (C++17 cannot capture
  // a binding).
  CLI::App *run = nullptr, *validate = nullptr, *sweep = nullptr, *calibrate = nullptr, *compare = nullptr;
  CLI::Option* point = nullptr;
  std::tie(run, validate) = add_scenario_verbs(app, options);
  aggsim::cli::ListOptions list_options;
  CLI::App* list = add_list_verb(app, list_options);
  aggsim::cli::SweepOptions sweep_options;
  std::tie(sweep, point) = add_sweep_verbs(app, sweep_options);
  aggsim::cli::MeasuredOptions measured_options;
  std::tie(calibrate, compare) = aggsim::cli::add_measured_verbs(app, measured_options);
  aggsim::cli::PerfCommandOptions perf_options;
  CLI::App* perf = aggsim::cli::add_perf_verb(app, perf_options);
  aggsim::cli::BenchOptions bench_options;
  CLI::App* bench = add_bench_verb(app, bench_options);

  if (const std::string empty = aggsim::cli::empty_option_value(app, args); !empty.empty()) {
    std::cerr << "aggsim: error: " << aggsim::printable(empty) << "\n";
    return 2;
  }
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  try {
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    return report_parse_error(app, e, sweep, args);
  }
  if (const std::string empty = aggsim::cli::empty_positional(app); !empty.empty()) {
    std::cerr << "aggsim: error: " << aggsim::printable(empty) << "\n";
    return 2;
  }
  return run_reporting_errors([&] {
    aggsim::cli::check_environment();
    if (*run) return aggsim::cli::run_command(options);
    if (*validate) return aggsim::cli::validate_command(options);
    if (*sweep) {
      sweep_options.simgrid_args = options.simgrid_args;
      sweep_options.point_given = point->count() > 0;
      return aggsim::cli::sweep_command(sweep_options);
    }
    measured_options.simgrid_args = options.simgrid_args;
    if (*calibrate) return aggsim::cli::calibrate_command(measured_options);
    if (*compare) return aggsim::cli::compare_command(measured_options);
    if (*perf) {
      perf_options.simgrid_args = options.simgrid_args;
      return aggsim::cli::perf_command(perf_options);
    }
    if (*list) return aggsim::cli::list_command(list_options);
    if (*bench) return aggsim::cli::bench_command(bench_options);
    return 0;
  });
}

}  // namespace

int main(int argc, char** argv) {
#ifdef AGGSIM_MIMALLOC
  // Freed memory stays committed: a rank's step allocates and frees the same vectors again and
  // again, and mimalloc's default hands their pages back to the kernel in between, so every step
  // faulted them in anew (half the page faults of a 4,096-rank run). The peak is the same; the
  // environment (MIMALLOC_ALLOW_DECOMMIT=1) still overrides this default.
  mi_option_set_enabled_default(mi_option_allow_decommit, false);
#endif
  aggsim::register_child_main(&aggsim_main);
  const int status = aggsim_main(argc, argv);
  // What went to standard output must have arrived (a full device, a closed pipe): else it is an
  // error, not a success with a table nobody received.
  errno = 0;
  std::cout.flush();
  const bool flushed = std::fflush(stdout) == 0;
  const int error = errno;
  if (status != 0) return status;  // its one line is out already
  if (!flushed || std::ferror(stdout) || !std::cout) {
    std::fprintf(stderr, "aggsim: error: cannot write to standard output: %s\n",
                 error != 0 ? std::strerror(error) : "a write failed (a full device, or a reader that left?)");
    return 1;
  }
  return status;
}
