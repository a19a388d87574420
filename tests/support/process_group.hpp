#pragma once
// Background aggsim processes for the tests that interrupt or kill them: each is started as the
// leader of its own process group, so that a test can signal the group and see when every child
// of it has ended; and the temporaries an interrupted writer may leave.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "support/cli.hpp"

namespace aggsim::test {

// Starts a shell command in its own process group (so the whole group can be killed).
inline pid_t start_group(const std::string& command) {
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  setpgid(pid, pid);
  return pid;
}

// `aggsim args...` for start_group, its output and errors into `log`. The shell execs aggsim, so
// the group leader's pid is aggsim's.
inline std::string aggsim_command(const std::vector<std::string>& args, const std::filesystem::path& log) {
  std::string cmd = "exec " + shell_quote(AGGSIM_BIN);
  for (const auto& a : args) cmd += " " + shell_quote(a);
  return cmd + " >" + shell_quote(log.string()) + " 2>&1";
}

inline bool group_alive(pid_t group) {
  return ::kill(-group, 0) == 0;
}

inline bool wait_until(double seconds, const std::function<bool()>& done) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (!done()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

// Entries under `dir` whose names mark them as temporaries (".NAME.tmp-..." being written,
// ".NAME.old-..." being replaced). A running aggsim may remove a folder while it is listed: the
// listing then starts again (a few times) instead of failing.
inline std::vector<std::string> temporaries(const std::filesystem::path& dir) {
  namespace fs = std::filesystem;
  std::vector<std::string> found;
  for (int attempt = 0; attempt < 10; ++attempt) {
    found.clear();
    std::error_code ec;
    fs::recursive_directory_iterator it(dir, ec), end;
    for (; !ec && it != end; it.increment(ec)) {
      const std::string name = it->path().filename().string();
      if (name.find(".tmp-") != std::string::npos || name.find(".old-") != std::string::npos)
        found.push_back(it->path().string());
    }
    if (!ec) break;
  }
  return found;
}

}  // namespace aggsim::test
