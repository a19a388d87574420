#include "sim/sweep/child_process.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "sim/core/error.hpp"
#include "sim/engine/simulation.hpp"

extern char** environ;

namespace aggsim {

namespace fs = std::filesystem;

namespace {

ChildMain g_child_main = nullptr;

int thread_count() {
  std::error_code ec;
  int n = 0;
  for (fs::directory_iterator it("/proc/self/task", ec), end; !ec && it != end; it.increment(ec)) ++n;
  return ec ? -1 : n;
}

// The program name and ARGS, as the child's argv.
std::vector<std::string> command_line(const std::string& exe, const std::vector<std::string>& args) {
  std::vector<std::string> all = {exe};
  all.insert(all.end(), args.begin(), args.end());
  return all;
}

std::vector<char*> pointers(std::vector<std::string>& texts) {
  std::vector<char*> p;
  for (auto& t : texts) p.push_back(t.data());
  p.push_back(nullptr);
  return p;
}

pid_t execute_child(const std::string& exe, const std::vector<std::string>& args,
                    const fs::path& stderr_file) {
  auto arg_text = command_line(exe, args);
  auto argv = pointers(arg_text);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, stderr_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0644);
  std::vector<std::string> env_text = {fmt::format("{}={}", kSweepParentVariable, ::getpid())};
  for (char** e = environ; *e; ++e)
    if (std::string(*e).rfind(std::string(kSweepParentVariable) + "=", 0) != 0) env_text.push_back(*e);
  auto env = pointers(env_text);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, exe.c_str(), &actions, nullptr, argv.data(), env.data());
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) throw std::runtime_error(fmt::format("cannot start {}: {}", exe, std::strerror(rc)));
  return pid;
}

// Opens `path` onto descriptor `fd`; false on failure.
bool open_onto(int fd, const char* path, int flags) {
  const int opened = ::open(path, flags, 0644);
  if (opened < 0) return false;
  if (opened == fd) return true;
  const bool ok = ::dup2(opened, fd) == fd;
  ::close(opened);
  return ok;
}

// Closes the descriptors exec would close (those marked close-on-exec), such as a sweep folder's
// lock: a child must not hold it after its parent ends.
void close_close_on_exec_descriptors() {
  std::vector<int> fds;
  std::error_code ec;
  for (fs::directory_iterator it("/proc/self/fd", ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.find_first_not_of("0123456789") == std::string::npos) fds.push_back(std::stoi(name));
  }
  for (const int fd : fds) {
    const int flags = ::fcntl(fd, F_GETFD);
    if (fd > STDERR_FILENO && flags >= 0 && (flags & FD_CLOEXEC)) ::close(fd);
  }
}

// The forked child: what exec would have given it (default dispositions for the signals this process
// catches, the signal mask from before the fork, no close-on-exec descriptors, its parent's pid in
// the environment, the three standard descriptors), then aggsim's main() on its arguments.
[[noreturn]] void become_child(const std::string& exe, const std::vector<std::string>& args,
                               const fs::path& stderr_file, const sigset_t& mask, pid_t parent) {
  for (int sig = 1; sig < NSIG; ++sig) {
    struct sigaction current {};
    if (sigaction(sig, nullptr, &current) != 0 || current.sa_handler == SIG_IGN ||
        current.sa_handler == SIG_DFL)
      continue;
    struct sigaction fresh {};
    fresh.sa_handler = SIG_DFL;
    sigemptyset(&fresh.sa_mask);
    sigaction(sig, &fresh, nullptr);
  }
  sigprocmask(SIG_SETMASK, &mask, nullptr);
  close_close_on_exec_descriptors();
  if (setenv(kSweepParentVariable, std::to_string(parent).c_str(), 1) != 0 ||
      !open_onto(STDIN_FILENO, "/dev/null", O_RDONLY) || !open_onto(STDOUT_FILENO, "/dev/null", O_WRONLY) ||
      !open_onto(STDERR_FILENO, stderr_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC))
    ::_exit(127);  // what a failed exec returns
  auto arg_text = command_line(exe, args);
  auto argv = pointers(arg_text);
  const int rc = g_child_main(static_cast<int>(arg_text.size()), argv.data());
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  // Not exit(): the objects this process inherited (its parent's) are not the child's to destroy.
  ::_exit(rc);
}

pid_t fork_child(const std::string& exe, const std::vector<std::string>& args, const fs::path& stderr_file) {
  std::cout.flush();  // nothing buffered may be written twice
  std::cerr.flush();
  std::fflush(nullptr);
  // Every signal waits until the child has its own dispositions: none may run this process's
  // handlers in the child.
  sigset_t all, before;
  sigfillset(&all);
  sigprocmask(SIG_BLOCK, &all, &before);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid == 0) become_child(exe, args, stderr_file, before, parent);
  const int error = errno;
  sigprocmask(SIG_SETMASK, &before, nullptr);
  if (pid < 0)
    throw std::runtime_error(fmt::format("cannot start a child process: {}", std::strerror(error)));
  return pid;
}

}  // namespace

void register_child_main(ChildMain main) {
  g_child_main = main;
}

std::string spawn_mode() {
  const char* spawn = std::getenv(kSpawnVariable);
  const std::string mode = spawn ? spawn : "";
  if (mode != "" && mode != "fork" && mode != "exec")
    throw InputError(fmt::format("{} must be fork or exec, not '{}'", kSpawnVariable, mode));
  return mode;
}

bool child_would_fork(const std::string& exe, std::string* why_not) {
  std::string reason;
  const std::string mode = spawn_mode();
  std::error_code ec;
  if (mode == "exec")
    reason = fmt::format("{}=exec", kSpawnVariable);
  else if (g_child_main == nullptr)
    reason = "this program is not aggsim";
  else if (!fs::equivalent(exe, "/proc/self/exe", ec) || ec)
    reason = fmt::format("the child runs {}, another executable", exe);
  else if (simgrid_engine_made())
    reason = "this process has made a SimGrid engine";
  else if (thread_count() != 1)
    reason = "this process runs more than one thread";
  if (why_not) *why_not = reason;
  return reason.empty();
}

pid_t start_child(const std::string& exe, const std::vector<std::string>& args, const fs::path& stderr_file) {
  if (child_would_fork(exe)) return fork_child(exe, args, stderr_file);
  return execute_child(exe, args, stderr_file);
}

void stop_with_sweep_parent() {
  const char* parent = std::getenv(kSweepParentVariable);
  if (!parent) return;
  ::prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (std::to_string(::getppid()) != parent) ::raise(SIGTERM);  // the parent died before the prctl
}

std::string self_executable() {
  std::error_code ec;
  const fs::path p = fs::read_symlink("/proc/self/exe", ec);
  if (ec) throw std::runtime_error("cannot find the aggsim executable (/proc/self/exe): " + ec.message());
  return p.string();
}

}  // namespace aggsim
