#include "sim/cli/commands.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <iostream>

#include "algorithms/registry.hpp"
#include "sim/cli/key_reference.hpp"
#include "sim/cli/system_reference.hpp"
#include "sim/core/data_files.hpp"
#include "sim/core/error.hpp"
#include "sim/core/input_file.hpp"
#include "sim/engine/simulation.hpp"
#include "sim/output/columns.hpp"
#include "sim/output/report.hpp"
#include "sim/platform/platform_overrides.hpp"
#include "sim/platform/systems.hpp"
#include "sim/platform/topology.hpp"
#include "sim/scenario/scenario_keys.hpp"
#include "sim/scenario/scenario_loader.hpp"
#include "sim/scenario/workload_loader.hpp"
#include "sim/sweep/child_process.hpp"
#include "sim/sweep/local_runner.hpp"
#include "sim/workload/options.hpp"

namespace aggsim::cli {

namespace {

std::string output_dir(const Scenario& sc, const RunOptions& options) {
  if (!options.out_dir.empty()) return options.out_dir;
  if (!sc.output.dir.empty()) return sc.output.dir;
  return "out/" + sc.name;
}

void print_params(const std::vector<ParamSpec>& params) {
  for (const auto& p : params) {
    std::string def = p.required               ? "required"
                      : p.default_text.empty() ? "optional"
                                               : "default " + p.default_text;
    if (p.kind == ParamKind::choice) {
      std::string choices;
      for (const auto& c : p.choices) choices += (choices.empty() ? "" : " | ") + c;
      def += "; one of " + choices;
    }
    fmt::print("      {:<22} {:<10} {} ({})\n", p.key,
               p.shown_type.empty() ? param_kind_name(p.kind) : p.shown_type, p.help, def);
  }
}

// "12.3 s", "4 min 05 s", "2 h 07 min": wall times a person reads at a glance.
std::string wall_duration(double seconds) {
  if (seconds < 60) return fmt::format("{:.1f} s", seconds);
  const auto s = static_cast<long long>(seconds + 0.5);
  if (s < 3600) return fmt::format("{} min {:02} s", s / 60, s % 60);
  return fmt::format("{} h {:02} min", s / 3600, s % 3600 / 60);
}

// The start line: what runs, where, and where its outputs go.
std::string start_line(const Scenario& sc, const std::string& platform,
                       const std::vector<LinkClassCost>& links, const std::string& dir) {
  const std::string compression =
      sc.compression.name == "none" ? "" : fmt::format(" + {} compression", sc.compression.name);
  const std::string costs = links.empty() ? "" : fmt::format(" ({})", describe_link_classes(links));
  return fmt::format("aggsim: running {}: {}{}, {} ranks on {}, network {}{}, {} step{} -> {}\n", sc.name,
                     sc.algorithm.name, compression, sc.ranks, platform, network_preset_name(sc.network),
                     costs, sc.steps, sc.steps == 1 ? "" : "s", dir);
}

// One heartbeat line. The message rate is over the time since the previous line; the remaining
// time extrapolates the wall time per finished step ("?" before the first step finishes).
class Heartbeat {
 public:
  std::string line(const RunProgress& p) {
    const double dt = p.elapsed_s - last_elapsed_;
    const double rate = dt > 0 ? static_cast<double>(p.messages - last_messages_) / dt : 0;
    last_elapsed_ = p.elapsed_s;
    last_messages_ = p.messages;
    std::string remaining = "?";
    if (p.finished)
      remaining = wall_duration(0);
    else if (p.steps_done > 0)
      remaining = wall_duration(p.elapsed_s * (p.steps_total - p.steps_done) / p.steps_done);
    return fmt::format(
        "aggsim: {}steps {}/{}, simulated {:.6g} s, messages {} ({:.0f}/s), elapsed {}, remaining {}\n",
        p.finished ? "done: " : "", p.steps_done, p.steps_total, p.sim_time_s, p.messages,
        p.finished && p.elapsed_s > 0 ? static_cast<double>(p.messages) / p.elapsed_s : rate,
        wall_duration(p.elapsed_s), remaining);
  }

 private:
  double last_elapsed_ = 0;
  std::uint64_t last_messages_ = 0;
};

bool wants_heartbeat(const RunOptions& options) {
  if (options.quiet || options.no_progress) return false;
  return options.progress || ::isatty(STDERR_FILENO) == 1;
}

}  // namespace

std::string locate_scenario(const std::string& given, const std::string& what) {
  if (given.empty() || input_path_exists(given, what)) return given;
  if (std::string found = find_data_file(given, "", DataKind::scenario, what); !found.empty()) return found;
  std::string tried;
  for (const auto& c : data_candidates(given, "", DataKind::scenario))
    tried += (tried.empty() ? "" : ", ") + c;
  throw InputError(fmt::format("{}: {} file not found (looked for {})", given, what, tried));
}

int run_command(const RunOptions& given_options) {
  stop_with_sweep_parent();  // a point of calibrate or compare ends with its parent, even a killed one
  RunOptions options = given_options;
  options.scenario = locate_scenario(options.scenario);
  const Scenario sc = load_scenario(options.scenario, options.overrides);
  print_dropped_keys(sc);
  const std::string dir = output_dir(sc, options);
  RunFolderRequest folder;
  folder.dir = dir;
  folder.protect = {options.scenario};
  folder.resolved_yaml = resolved_yaml(sc);
  folder.replace_different = options.force;
  prepare_run_folder(folder);  // before simulating: a bad --out must not cost a whole run
  const auto wall_start = std::chrono::steady_clock::now();
  SimulationHooks hooks;
  if (!options.quiet)
    hooks.on_start = [&](const std::string& platform, const std::vector<LinkClassCost>& links) {
      std::fputs(printable_lines(start_line(sc, platform, links, dir)).c_str(), stderr);
      std::fflush(stderr);
    };
  Heartbeat heartbeat;
  if (wants_heartbeat(options)) {
    hooks.progress_interval_s = options.progress_interval_s;
    hooks.progress = [&](const RunProgress& p) {
      std::fputs(heartbeat.line(p).c_str(), stderr);
      std::fflush(stderr);
    };
  }
  const SimulationResult result = simulate(sc, options.simgrid_args, hooks);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  const auto steps = step_summaries(result);
  const auto files = run_outputs(sc, result, steps, folder.resolved_yaml);
  write_run_folder(folder, files);
  if (!options.quiet) {
    std::cout << printable_lines(human_summary(sc, result, steps, dir, files));
    std::cout << fmt::format("  wall time {:.3f} s\n", wall);
  }
  return 0;
}

void check_environment() {
  spawn_mode();  // TMPDIR is checked where a command needs it (system_temporary_folder)
}

int validate_command(const RunOptions& given_options) {
  RunOptions options = given_options;
  options.scenario = locate_scenario(options.scenario);
  const Scenario sc = load_scenario(options.scenario, options.overrides);
  print_dropped_keys(sc);
  std::string checks;
  const std::string platform = check_platform(sc, options.simgrid_args, &checks);
  std::cout << printable_lines(fmt::format("{}: ok: {} ranks, {} steps, {} on {}, network {}\n{}",
                                           options.scenario, sc.ranks, sc.steps, sc.algorithm.name, platform,
                                           network_preset_name(sc.network), checks));
  return 0;
}

int list_command(const ListOptions& options) {
  if (options.keys) {
    std::cout << (options.markdown ? key_reference_markdown() : key_reference_text());
    return 0;
  }
  if (options.outputs) {
    std::cout << (options.markdown ? output_reference_markdown() : output_reference_text());
    return 0;
  }
  if (options.systems) {
    std::cout << (options.markdown ? system_reference_markdown() : system_reference_text());
    return 0;
  }
  if (options.markdown) throw InputError("--markdown: give --keys, --outputs or --systems with it");
  fmt::print("Algorithms (algorithm.name; each also takes the common algorithm keys below):\n");
  for (const auto& a : algorithm_table()) {
    fmt::print("  {:<30} {}\n", a.name, a.summary);
    print_params(a.params);
  }
  fmt::print("\nCommon algorithm keys (algorithm.*, taken by every algorithm):\n");
  print_params(common_algorithm_param_specs());
  fmt::print("\nCompressors (compression.name):\n");
  for (const auto& c : compressor_table()) {
    fmt::print("  {:<30} {}\n", c.name, c.summary);
    print_params(c.params);
  }
  fmt::print("\nMemories (compression.memory; error_feedback: true is residual):\n");
  for (const auto& m : memory_table()) fmt::print("  {:<30} {}\n", m.name, m.summary);
  fmt::print("\nTopologies (platform.topology; or platform.file: a SimGrid XML):\n");
  for (const auto& t : topology_table()) {
    fmt::print("  {:<30} {}\n", t.name, t.summary);
    print_params(t.params);
  }
  fmt::print("\nNamed systems (platform.system; their values and sources: aggsim list --systems):\n");
  for (const auto& s : system_table()) fmt::print("  {:<30} {}\n", s.name, s.summary);
  fmt::print(
      "\nPer-host and per-node values of a generated platform (platform.overrides: [{{hosts: NAMES | nodes: "
      "INDICES, key: value, ...}}, ...]; later entries win; platforms/README.md):\n");
  print_params(override_param_specs());
  fmt::print("\nModel (model.*):\n");
  print_params(model_param_specs());
  fmt::print("\nTraining workload (workload.*; see sim/workload/README.md):\n");
  print_params(workload_param_specs());
  fmt::print("\nTop level:\n");
  print_params(top_level_param_specs());
  fmt::print("\nCompute (compute.*; compute.straggler.* is the straggler noise):\n");
  print_params(compute_param_specs());
  fmt::print("\nEngine (engine.*):\n");
  print_params(engine_param_specs());
  fmt::print("\nParallel layout (parallel.*):\n");
  print_params(parallel_param_specs());
  fmt::print("\nOutput (output.*):\n");
  print_params(output_param_specs());
  fmt::print("\nNetwork presets (network):\n");
  fmt::print("  {:<30} {}\n", "auto (default)",
             "by link class: inside a node latency + size / bandwidth; between nodes by platform.fabric "
             "(infiniband, roce: as alpha_beta; ethernet: lv08)");
  for (auto preset : {NetworkPreset::lv08, NetworkPreset::alpha_beta, NetworkPreset::ns3}) {
    std::string cfg;
    for (const auto& c : network_preset_config(preset)) cfg += (cfg.empty() ? "" : " ") + ("--cfg=" + c);
    fmt::print("  {:<30} {}\n", network_preset_name(preset), cfg);
  }
  fmt::print("\nEvery key with its path: aggsim list --keys; every output column: aggsim list --outputs\n");
  return 0;
}

}  // namespace aggsim::cli
