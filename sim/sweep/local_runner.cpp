#include "sim/sweep/local_runner.hpp"

#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <map>
#include <stdexcept>

#include "sim/core/terminal.hpp"
#include "sim/sweep/progress.hpp"

namespace aggsim {

namespace fs = std::filesystem;

namespace {

// Set by SIGINT/SIGTERM: the runner stops its children (whose half-written run folders are never
// renamed into place) instead of leaving them running unattended.
volatile std::sig_atomic_t g_stop = 0;
extern "C" void on_stop_signal(int) {
  g_stop = 1;
}

struct StopSignals {
  struct sigaction old_int {
  }, old_term{};
  StopSignals() {
    struct sigaction sa {};
    sa.sa_handler = on_stop_signal;  // no SA_RESTART: waitpid returns EINTR
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
  }
  ~StopSignals() {
    sigaction(SIGINT, &old_int, nullptr);
    sigaction(SIGTERM, &old_term, nullptr);
  }
};

struct Child {
  const SweepPoint* point;
  std::chrono::steady_clock::time_point start;
};

// Starts `aggsim sweep run FILE --point ID --out DIR` with stdout discarded and stderr kept in a
// file. The child is stopped when this process dies (stop_with_sweep_parent), so killing only the
// runner leaves no orphan for a rerun to duplicate.
pid_t spawn_point(const Sweep& sweep, const SweepFolder& folder, const SweepPoint& point,
                  const LocalRunOptions& options) {
  std::vector<std::string> args = {
      "sweep", "run", sweep.file, "--point", point.id, "--out", folder.root().string()};
  args.insert(args.end(), options.extra_args.begin(), options.extra_args.end());
  fs::create_directories(folder.logs_dir());
  return start_child(options.exe, args, folder.stderr_file(point.id));
}

std::string exit_description(int status) {
  if (WIFEXITED(status)) return fmt::format("exit status {}", WEXITSTATUS(status));
  if (WIFSIGNALED(status))
    return fmt::format("killed by signal {} ({})", WTERMSIG(status), strsignal(WTERMSIG(status)));
  return "ended abnormally";
}

}  // namespace

LocalRunResult run_sweep_locally(const Sweep& sweep, const SweepFolder& folder,
                                 const LocalRunOptions& options) {
  std::vector<const SweepPoint*> todo;
  for (const auto& p : sweep.points)
    if (!folder.finished(p.id)) todo.push_back(&p);
  const int jobs = std::max(1, options.jobs);
  print_lines(stderr, "sweep {}: {} points, {} already done, {} to run with {} job{} -> {}\n", sweep.name,
              sweep.points.size(), sweep.points.size() - todo.size(), todo.size(), jobs, jobs > 1 ? "s" : "",
              folder.root().string());
  std::fflush(stderr);

  SweepProgress progress(static_cast<int>(todo.size()), stderr);
  g_stop = 0;
  const StopSignals stop_signals;
  std::map<pid_t, Child> running;
  // Whatever goes wrong here (a full disk, a failed spawn), no child is left running unattended.
  struct StopChildren {
    std::map<pid_t, Child>& running;
    ~StopChildren() {
      for (const auto& [pid, child] : running) ::kill(pid, SIGTERM);
      for (const auto& [pid, child] : running) ::waitpid(pid, nullptr, 0);
    }
  } stop_children{running};
  std::size_t next = 0;
  int failures = 0;
  while (next < todo.size() || !running.empty()) {
    if (g_stop) {
      for (const auto& [pid, child] : running) ::kill(pid, SIGTERM);
      for (const auto& [pid, child] : running) ::waitpid(pid, nullptr, 0);
      running.clear();
      progress.close();
      print_lines(stderr, "sweep {}: interrupted; finished points are kept, run the sweep again to resume\n",
                  sweep.name);
      return {failures, true};
    }
    while (next < todo.size() && static_cast<int>(running.size()) < jobs) {
      const SweepPoint* p = todo[next++];
      running[spawn_point(sweep, folder, *p, options)] = {p, std::chrono::steady_clock::now()};
      progress.started();
    }
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, 0);
    if (pid < 0) {
      if (errno == EINTR) continue;
      throw std::runtime_error(fmt::format("waitpid: {}", std::strerror(errno)));
    }
    auto it = running.find(pid);
    if (it == running.end()) continue;  // not one of ours
    const SweepPoint& p = *it->second.point;
    const double wall =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - it->second.start).count();
    running.erase(it);
    const fs::path err = folder.stderr_file(p.id);
    const bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0 && folder.finished(p.id);
    const std::string what = fmt::format("{} ({})", p.id, describe_point(sweep, p));
    if (ok) {
      folder.clear_failure(p.id);
    } else {
      ++failures;
      folder.record_failure(p.id, fmt::format("{}\n{}", exit_description(status), read_text_file(err)));
    }
    std::error_code ignored;
    fs::remove(err, ignored);
    progress.finished(ok, ok ? what : what + ": " + exit_description(status), wall);
  }
  progress.close();
  std::error_code ignored;
  fs::remove(folder.logs_dir(), ignored);  // only if empty
  return {failures, false};
}

}  // namespace aggsim
