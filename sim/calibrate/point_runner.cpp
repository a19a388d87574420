#include "sim/calibrate/point_runner.hpp"

#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "sim/core/error.hpp"
#include "sim/core/input_file.hpp"
#include "sim/output/temporary.hpp"
#include "sim/sweep/child_process.hpp"

namespace aggsim {

namespace fs = std::filesystem;

namespace {

// A child's summary.json or stderr: a regular file of bounded size (the child writes both).
std::string point_file_text(const fs::path& p) {
  std::error_code ec;
  if (!fs::is_regular_file(fs::symlink_status(p, ec)) || fs::file_size(p, ec) > kMaxInputBytes || ec)
    return "";
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// SIGINT, SIGTERM and SIGHUP while points run: the batch stops its children and throws
// Interrupted, which removes its scratch folder (and the caller's temporaries) before main() ends
// the process by the same signal.
volatile std::sig_atomic_t g_signal = 0;
extern "C" void on_point_batch_signal(int sig) {
  g_signal = sig;
}

constexpr std::array<int, 3> kStopSignals = {SIGINT, SIGTERM, SIGHUP};

class PointRunStopSignals {
 public:
  PointRunStopSignals() {
    struct sigaction sa {};
    sa.sa_handler = on_point_batch_signal;  // no SA_RESTART: waitpid returns EINTR
    sigemptyset(&sa.sa_mask);
    for (std::size_t i = 0; i < kStopSignals.size(); ++i) sigaction(kStopSignals[i], &sa, &old_[i]);
  }
  ~PointRunStopSignals() {
    for (std::size_t i = 0; i < kStopSignals.size(); ++i) sigaction(kStopSignals[i], &old_[i], nullptr);
  }
  PointRunStopSignals(const PointRunStopSignals&) = delete;
  PointRunStopSignals& operator=(const PointRunStopSignals&) = delete;

 private:
  std::array<struct sigaction, kStopSignals.size()> old_{};
};

// Stops (SIGTERM) and reaps the children still running, whatever ends the batch.
void stop_children(std::map<pid_t, std::size_t>& running) {
  for (const auto& [pid, index] : running) ::kill(pid, SIGTERM);
  for (const auto& [pid, index] : running) ::waitpid(pid, nullptr, 0);
  running.clear();
}

// `aggsim run SCENARIO -q --out OUT --set ...`; the child is stopped when this process dies, even by
// SIGKILL (stop_with_sweep_parent).
pid_t spawn(const PointRunOptions& options, const std::vector<std::string>& sets, const fs::path& out,
            const fs::path& err) {
  std::vector<std::string> args = {"run", options.scenario, "-q", "--out", out.string()};
  for (const auto& s : sets) args.insert(args.end(), {"--set", s});
  args.insert(args.end(), options.simgrid_args.begin(), options.simgrid_args.end());
  return start_child(options.exe, args, err);
}

// The algorithm/protocol pair most of the run's calls used (nccl_calls_<algorithm>_<protocol>).
std::string main_choice(const nlohmann::json& summary) {
  const std::string prefix = "nccl_calls_";
  std::string best;
  double most = 0;
  for (const auto& [key, value] : summary.items()) {
    if (key.rfind(prefix, 0) != 0 || !value.is_number() || value.get<double>() <= most) continue;
    most = value.get<double>();
    const std::string pair = key.substr(prefix.size());
    const auto cut = pair.rfind('_');
    best = pair.substr(0, cut) + "/" + pair.substr(cut + 1);
  }
  return best;
}

// A point is one call: its time is the call's record (collectives.csv's time_s, summary.json's
// collective_time_s), the one figure a run reports for it. A run of several calls (buckets) takes
// its step's time.
double point_time(const nlohmann::json& summary) {
  const auto calls = summary.find("collective_calls");
  const auto time = summary.find("collective_time_s");
  if (calls != summary.end() && calls->is_number() && calls->get<double>() == 1 && time != summary.end() &&
      time->is_number())
    return time->get<double>();
  return summary["sim_time_s"].get<double>();
}

std::vector<double> run_distinct_points(const PointRunOptions& options,
                                        const std::vector<std::vector<std::string>>& sets,
                                        std::vector<std::string>* choices) {
  if (choices) choices->assign(sets.size(), "");
  g_signal = 0;
  const PointRunStopSignals stop_signals;
  // The children's run folders go to a private scratch folder: a temporary (with aggsim's proof of
  // origin) in the system's temporary folder, removed when the batch ends however it ends, except
  // by SIGKILL: the next batch removes one left by a process that no longer runs.
  const fs::path tmp_dir = system_temporary_folder();
  remove_stale_temporaries(tmp_dir);
  std::optional<Temporary> scratch;
  {
    const HeldSignals held;
    scratch.emplace(tmp_dir, "aggsim-points");
  }
  const fs::path dir = scratch->path();
  std::vector<double> times(sets.size(), 0.0);
  std::map<pid_t, std::size_t> running;
  struct Reaper {
    std::map<pid_t, std::size_t>& running;
    ~Reaper() { stop_children(running); }
  } reaper{running};
  std::size_t next = 0;
  std::string failure;
  bool input_failure = false;
  while ((next < sets.size() && failure.empty()) || !running.empty()) {
    if (g_signal) {
      stop_children(running);
      throw Interrupted(g_signal);  // the scratch folder and the caller's temporaries go on the way up
    }
    while (failure.empty() && next < sets.size() &&
           static_cast<int>(running.size()) < std::max(1, options.jobs)) {
      running[spawn(options, sets[next], dir / fmt::format("p{}", next),
                    dir / fmt::format("p{}.err", next))] = next;
      ++next;
    }
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, 0);
    if (pid < 0) {
      if (errno == EINTR) continue;
      throw std::runtime_error(fmt::format("waitpid: {}", std::strerror(errno)));
    }
    const auto it = running.find(pid);
    if (it == running.end()) continue;
    const std::size_t i = it->second;
    running.erase(it);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
      const auto json = nlohmann::json::parse(point_file_text(dir / fmt::format("p{}", i) / "summary.json"),
                                              nullptr, false);
      if (json.is_object() && json.contains("sim_time_s") && json["sim_time_s"].is_number()) {
        times[i] = point_time(json);
        if (choices) (*choices)[i] = main_choice(json);
        continue;
      }
    }
    if (failure.empty()) {  // keep the first failure; let the others finish
      std::string err = point_file_text(dir / fmt::format("p{}.err", i));
      if (err.rfind("aggsim: error: ", 0) == 0) err = err.substr(15);
      while (!err.empty() && err.back() == '\n') err.pop_back();
      input_failure = WIFEXITED(status) && WEXITSTATUS(status) == 2;
      std::string what;
      for (const auto& s : sets[i]) what += " --set " + s;
      failure = fmt::format("{} (simulating{})", err.empty() ? "the simulation failed" : err, what);
    }
  }
  if (!failure.empty()) {
    if (input_failure) throw InputError(failure);
    throw std::runtime_error(failure);
  }
  return times;
}

}  // namespace

std::vector<double> run_points(const PointRunOptions& options,
                               const std::vector<std::vector<std::string>>& sets,
                               std::vector<std::string>* choices) {
  // Points with the same overrides are the same simulation (a log repeating a size, files measuring
  // the same point): each is run once, its result copied.
  std::vector<std::vector<std::string>> distinct;
  std::vector<std::size_t> run_of(sets.size());
  std::map<std::vector<std::string>, std::size_t> seen;
  for (std::size_t i = 0; i < sets.size(); ++i) {
    const auto [it, fresh] = seen.emplace(sets[i], distinct.size());
    if (fresh) distinct.push_back(sets[i]);
    run_of[i] = it->second;
  }
  if (distinct.size() > kMaxPointRuns)
    throw InputError(fmt::format("the measurements ask for {} distinct simulations, more than the {} aggsim runs "
                                 "for one command (one process each): give fewer measurement files or sizes",
                                 distinct.size(), kMaxPointRuns));
  std::vector<std::string> distinct_choices;
  const std::vector<double> distinct_times =
      run_distinct_points(options, distinct, choices ? &distinct_choices : nullptr);
  std::vector<double> times(sets.size());
  if (choices) choices->assign(sets.size(), "");
  for (std::size_t i = 0; i < sets.size(); ++i) {
    times[i] = distinct_times[run_of[i]];
    if (choices) (*choices)[i] = distinct_choices[run_of[i]];
  }
  return times;
}

}  // namespace aggsim
