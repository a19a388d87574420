// Child processes (sim/sweep/child_process.hpp): a forked child starts as an executed one would, and
// the points of perf, calibrate, compare and a sweep give the same bytes either way.
#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "sim/sweep/child_process.hpp"
#include "support/cli.hpp"
#include "support/csv.hpp"

using namespace aggsim::test;
namespace fs = std::filesystem;

namespace {

// Sets an environment variable for one scope (children started meanwhile inherit it).
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    had_ = std::getenv(name) != nullptr;
    ::setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (had_)
      ::setenv(name_, old_.c_str(), 1);
    else
      ::unsetenv(name_);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::string old_;
  bool had_ = false;
};

int g_close_on_exec_fd = -1;
bool g_handler_ran = false;
extern "C" void count_signal(int) {
  g_handler_ran = true;
}

// The child's main in the tests below: reports on stderr what it was started with.
int reporting_main(int argc, char** argv) {
  std::string args;
  for (int i = 1; i < argc; ++i) args += std::string(" ") + argv[i];
  struct stat out {};
  ::fstat(STDOUT_FILENO, &out);
  char byte = 0;
  const auto read_stdin = ::read(STDIN_FILENO, &byte, 1);
  const char* parent = std::getenv(aggsim::kSweepParentVariable);
  std::fprintf(stderr, "args:%s\nparent matches: %d\nstdin at end: %d\nstdout is a device: %d\n",
               args.c_str(), parent && std::to_string(::getppid()) == parent, read_stdin == 0,
               S_ISCHR(out.st_mode) ? 1 : 0);
  std::fprintf(stderr, "close-on-exec descriptor open: %d\n", ::fcntl(g_close_on_exec_fd, F_GETFD) >= 0);
  std::fputs("to stdout\n", stdout);
  if (argc > 1 && std::string(argv[1]) == "signal") ::raise(SIGTERM);  // must end the child
  return 7;
}

int wait_for(pid_t pid) {
  int status = 0;
  ::waitpid(pid, &status, 0);
  return status;
}

// Runs `aggsim args...` in `dir` with AGGSIM_SPAWN=mode.
CliResult run_with(const char* mode, const std::vector<std::string>& args, const fs::path& dir) {
  const ScopedEnv env(aggsim::kSpawnVariable, mode);
  return run_aggsim(args, dir);
}

const char* kScenario = R"(name: children
ranks: 8
steps: 1
platform: {topology: cluster, nodes: 2, gpus_per_node: 4, intra_bandwidth: 100GBps, intra_latency: 0.5us,
           bandwidth: 100Gbps, latency: 1us}
model: {size: 1MB, math: off}
algorithm: {name: nccl_allreduce}
compute: {reduce_speed: 0}
)";

}  // namespace

TEST_CASE("a forked child starts as an executed one: arguments, descriptors, environment and signals",
          "[calibrate][children]") {
  const auto dir = fresh_dir("children");
  const std::string self = aggsim::self_executable();
  std::string why;
  CHECK(!aggsim::child_would_fork(self, &why));  // nothing registered: executed
  CHECK(why == "this program is not aggsim");
  aggsim::register_child_main(&reporting_main);
  struct Unregister {
    ~Unregister() { aggsim::register_child_main(nullptr); }
  } unregister;
  REQUIRE(aggsim::child_would_fork(self, &why));
  CHECK(!aggsim::child_would_fork("/bin/sh", &why));
  CHECK(why == "the child runs /bin/sh, another executable");
  {
    const ScopedEnv exec(aggsim::kSpawnVariable, "exec");
    CHECK(!aggsim::child_would_fork(self, &why));
    CHECK(why == "AGGSIM_SPAWN=exec");
  }
  {
    const ScopedEnv bogus(aggsim::kSpawnVariable, "vfork");
    CHECK_THROWS_WITH(aggsim::child_would_fork(self), "AGGSIM_SPAWN must be fork or exec, not 'vfork'");
  }

  // This process catches SIGTERM and holds a close-on-exec descriptor: the child gets neither.
  g_close_on_exec_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  REQUIRE(g_close_on_exec_fd >= 0);
  struct sigaction catching {
  }, before{};
  catching.sa_handler = count_signal;
  sigemptyset(&catching.sa_mask);
  sigaction(SIGTERM, &catching, &before);
  g_handler_ran = false;

  int status = wait_for(aggsim::start_child(self, {"a b", "c"}, dir / "err"));
  CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 7));
  CHECK(read_file(dir / "err") ==
        "args: a b c\nparent matches: 1\nstdin at end: 1\nstdout is a device: 1\n"
        "close-on-exec descriptor open: 0\n");
  status = wait_for(aggsim::start_child(self, {"signal"}, dir / "err2"));
  CHECK((WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM));
  CHECK(!g_handler_ran);

  // Executed children get the same: /bin/sh reports its environment and descriptors.
  status = wait_for(aggsim::start_child(
      "/bin/sh",
      {"-c",
       "echo \"parent matches: $([ \"$AGGSIM_SWEEP_PARENT\" = \"$PPID\" ] && echo 1)\" >&2; "
       "[ -c /dev/stdout ] && echo stdout-device >&2; exit 5"},
      dir / "err3"));
  CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 5));
  CHECK(read_file(dir / "err3") == "parent matches: 1\nstdout-device\n");

  sigaction(SIGTERM, &before, nullptr);
  ::close(g_close_on_exec_fd);
  fs::remove_all(dir);
}

TEST_CASE("forked and executed points give the same bytes: perf, calibrate, compare and a sweep",
          "[calibrate][children][cli]") {
  const auto dir = fresh_dir("children-bytes");
  write_file(dir / "s.yaml", kScenario);
  for (const char* mode : {"fork", "exec"}) {
    const auto r = run_with(mode,
                            {"perf", "s.yaml", "--min", "4KiB", "--max", "64MiB", "--factor", "16", "--csv",
                             std::string("perf_") + mode + ".csv", "-j", "2"},
                            dir);
    INFO(mode << ": " << r.err);
    REQUIRE(r.exit_code == 0);
  }
  // The simulated table as a measurement file, 20 % slower than simulated.
  std::string measured = "collective,ranks,nodes,bytes,time\n";
  for (const auto& row : read_csv_rows(read_file(dir / "perf_fork.csv")))
    measured += fmt::format("all_reduce,8,2,{},{}\n", row.at("bytes"), 1.2 * std::stod(row.at("time_s")));
  write_file(dir / "measured.csv", measured);
  for (const char* mode : {"fork", "exec"}) {
    const std::string m = mode;
    auto r = run_with(mode, {"calibrate", "s.yaml", "measured.csv", "--out", "cal_" + m + ".yaml", "-j", "2"},
                      dir);
    INFO(mode << ": " << r.err);
    REQUIRE(r.exit_code == 0);
    write_file(dir / ("s_" + m + ".yaml"), std::string(kScenario) + "calibration: cal_" + m + ".yaml\n");
    r = run_with(mode, {"compare", "s_" + m + ".yaml", "measured.csv", "--csv", "cmp_" + m + ".csv"}, dir);
    REQUIRE(r.exit_code == 0);
    r = run_with(mode,
                 {"sweep", "run", "s.yaml", "--grid", "ranks=4,8", "--grid", "model.size=1MB,8MB", "--jobs",
                  "2", "--out", "sweep_" + m},
                 dir);
    REQUIRE(r.exit_code == 0);
  }
  for (const std::string file : {"perf_{}.csv", "cal_{}.yaml", "cmp_{}.csv", "sweep_{}/results.csv"}) {
    const auto at = file.find("{}");
    const std::string forked = file.substr(0, at) + "fork" + file.substr(at + 2);
    const std::string executed = file.substr(0, at) + "exec" + file.substr(at + 2);
    INFO(forked << " against " << executed);
    REQUIRE(!read_file(dir / forked).empty());
    CHECK(read_file(dir / forked) == read_file(dir / executed));
  }
  // Every file of every point's run folder.
  int compared = 0;
  for (const auto& e : fs::recursive_directory_iterator(dir / "sweep_fork" / "runs")) {
    if (!e.is_regular_file()) continue;
    const fs::path executed =
        dir / "sweep_exec" / "runs" / fs::relative(e.path(), dir / "sweep_fork" / "runs");
    INFO(e.path());
    CHECK(read_file(e.path()) == read_file(executed));
    ++compared;
  }
  CHECK(compared >= 4 * 4);
  fs::remove_all(dir);
}
