// `aggsim bench`: times the ring all-reduce step at scale, in child processes (one SimGrid engine
// each), with math off and on, beside a bare SimGrid program sending the same messages.
#include <fmt/format.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "sim/cli/commands.hpp"
#include "sim/core/error.hpp"
#include "sim/core/units.hpp"
#include "sim/engine/simulation.hpp"
#include "sim/output/temporary.hpp"

namespace aggsim::cli {

namespace {

namespace fs = std::filesystem;

struct Measured {
  double wall_s = 0;
  double cpu_s = 0;  // user + system: robust to other load on the machine
  double peak_rss_mb = 0;
  std::string out;  // the child's standard output
};

// Runs argv[0] with args, stdout captured to a file; waits with wait4 for its peak RSS.
Measured measure(const std::vector<std::string>& argv, const fs::path& stdout_file) {
  const auto start = std::chrono::steady_clock::now();
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    if (!std::freopen(stdout_file.c_str(), "w", stdout)) _exit(127);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  int status = 0;
  rusage usage{};
  wait4(pid, &status, 0, &usage);
  Measured m;
  m.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  m.peak_rss_mb = static_cast<double>(usage.ru_maxrss) / 1024.0;
  m.cpu_s = static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
            1e-6 * static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw std::runtime_error(fmt::format("benchmark child {} failed (status {})", argv[0], status));
  std::ifstream in(stdout_file);
  std::stringstream ss;
  ss << in.rdbuf();
  m.out = ss.str();
  return m;
}

std::string self_path() {
  return fs::read_symlink("/proc/self/exe").string();
}

}  // namespace

int bench_command(const BenchOptions& options) {
  const int ranks = options.ranks;
  const std::string& size = options.size;
  const int repeat = options.repeat;
  const std::string reference = options.reference.empty() ? AGGSIM_BARE_RING_BIN : options.reference;
  const std::string& network = options.network;
  const std::uint64_t bytes = units::parse_bytes(size);

  const fs::path dir = system_temporary_folder() / fmt::format("aggsim-bench-{}", ::getpid());
  fs::create_directories(dir);
  // Both programs load the same platform file: a non-blocking cluster, one 10 Gb/s link per host.
  constexpr double kLinkBytesPerSecond = 10e9 / 8;
  const fs::path platform = dir / "platform.xml";
  std::ofstream(platform) << fmt::format(
      "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
      "<platform version=\"4.1\">\n  <cluster id=\"bench\" prefix=\"host-\" radical=\"0-{}\" suffix=\"\" "
      "speed=\"100Gf\" bw=\"{:.0f}Bps\" lat=\"1us\" sharing_policy=\"SPLITDUPLEX\"/>\n</platform>\n",
      ranks - 1, kLinkBytesPerSecond);
  // The bare program gets the preset's own SimGrid settings, so both simulate the same network.
  std::vector<std::string> network_cfg;
  for (const auto& c :
       network_preset_config(network == "alpha_beta" ? NetworkPreset::alpha_beta : NetworkPreset::lv08))
    network_cfg.push_back("--cfg=" + c);
  // The completion precision aggsim's lv08 preset sets on this platform (one rank a host), so that
  // both programs merge the same flow completions.
  const std::string precision_cfg =
      network == "alpha_beta"
          ? "--cfg=surf/precision:1e-9"
          : fmt::format("--cfg=surf/precision:{:.17g}", lv08_completion_precision(kLinkBytesPerSecond, 1));

  fmt::print("ring all-reduce, {} ranks, {} gradient, network {}, best of {} (messages/s per cpu second)\n",
             ranks, units::format_bytes(bytes), network, repeat);
  fmt::print("{:<20} {:>9} {:>9} {:>11} {:>10} {:>12} {:>12}  {}\n", "program", "wall (s)", "cpu (s)",
             "peak RSS MB", "messages", "messages/s", "sim time (s)", "cpu vs bare");

  auto best_of = [&](const std::vector<std::string>& argv) {
    Measured best;
    for (int i = 0; i < repeat; ++i) {
      Measured m = measure(argv, dir / "stdout.txt");
      if (i == 0 || m.cpu_s < best.cpu_s) best = m;  // CPU: what other load on the machine inflates least
    }
    return best;
  };

  // Bare SimGrid on the C library's malloc, the reference; and, where the build has it, the same
  // program on mimalloc, aggsim's allocator: how much of aggsim's time is SimGrid's own.
  std::vector<std::pair<std::string, std::string>> references = {{"bare SimGrid", reference}};
#ifdef AGGSIM_BARE_RING_MIMALLOC_BIN
  if (options.reference.empty()) references.emplace_back("bare, mimalloc", AGGSIM_BARE_RING_MIMALLOC_BIN);
#endif
  double bare_cpu = 0;  // the first reference's: the C library's malloc
  auto print_row = [&bare_cpu](const std::string& label, const Measured& m, std::uint64_t messages,
                               double sim_time) {
    fmt::print("{:<20} {:>9.3f} {:>9.3f} {:>11.1f} {:>10} {:>12.0f} {:>12.6f}  {:.2f}x\n", label, m.wall_s,
               m.cpu_s, m.peak_rss_mb, messages, static_cast<double>(messages) / m.cpu_s, sim_time,
               m.cpu_s / bare_cpu);
  };
  for (std::size_t i = 0; i < references.size(); ++i) {
    const auto& [label, program] = references[i];
    std::vector<std::string> argv = {program, platform.string(), std::to_string(ranks),
                                     std::to_string(bytes)};
    argv.insert(argv.end(), network_cfg.begin(), network_cfg.end());
    argv.insert(argv.end(), {precision_cfg, "--cfg=contexts/factory:raw", "--log=xbt_cfg.thres:warning"});
    const Measured m = best_of(argv);
    double sim_time = 0;
    std::uint64_t messages = 0;
    std::istringstream(m.out) >> sim_time >> messages;
    if (i == 0) bare_cpu = m.cpu_s;
    print_row(label, m, messages, sim_time);
  }
  // Reductions are free (reduce_speed: 0), as in the bare program: both simulate the same transfers
  // and nothing else, so their simulated times agree.
  for (const bool math : {false, true}) {
    const fs::path scenario = dir / "bench.yaml";
    std::ofstream(scenario) << fmt::format(
        "name: bench\nseed: 1\nranks: {}\nsteps: 1\nplatform: {{file: {}}}\nnetwork: {}\n"
        "model: {{size: {}B, proxy_dim: 4096, math: {}}}\nalgorithm: {{name: ring_allreduce, op: avg}}\n"
        "compute: {{reduce_speed: 0}}\n",
        ranks, platform.string(), network, bytes, math ? "on" : "off");
    // --force: the two runs (math off, then on) are different scenarios in the same folder.
    const Measured m = best_of(
        {self_path(), "run", scenario.string(), "--out", (dir / "run").string(), "--quiet", "--force"});
    const auto summary = nlohmann::json::parse(std::ifstream(dir / "run" / "summary.json"));
    print_row(math ? "aggsim (math on)" : "aggsim (math off)", m, summary["messages"].get<std::uint64_t>(),
              summary["sim_time_s"].get<double>());
  }
  fs::remove_all(dir);
  return 0;
}

}  // namespace aggsim::cli
