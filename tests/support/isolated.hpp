#pragma once
// SimGrid allows one Engine per process, so every simulation in a test runs in a forked child.
// The child returns a string (e.g. numbers to check); the parent asserts on it.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <functional>
#include <iostream>
#include <stdexcept>
#include <string>

namespace aggsim::test {

inline std::string run_isolated(const std::function<std::string()>& body) {
  int fds[2];
  if (pipe(fds) != 0) throw std::runtime_error("pipe failed");
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    close(fds[0]);
    int code = 0;
    std::string out;
    try {
      out = body();
    } catch (const std::exception& e) {
      out = std::string("EXCEPTION: ") + e.what();
      code = 3;
    }
    std::size_t written = 0;
    while (written < out.size()) {
      ssize_t n = write(fds[1], out.data() + written, out.size() - written);
      if (n <= 0) break;
      written += static_cast<std::size_t>(n);
    }
    close(fds[1]);
    std::fflush(nullptr);
    _exit(code);
  }
  close(fds[1]);
  std::string result;
  char buffer[65536];
  ssize_t n;
  while ((n = read(fds[0], buffer, sizeof buffer)) > 0) result.append(buffer, static_cast<std::size_t>(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status))
    throw std::runtime_error("simulation child crashed (signal " + std::to_string(WTERMSIG(status)) + ")");
  if (WEXITSTATUS(status) != 0) throw std::runtime_error("simulation child failed: " + result);
  return result;
}

}  // namespace aggsim::test
