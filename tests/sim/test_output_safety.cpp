// What aggsim never does to files it did not write: every refusal is an input error (exit 2)
// naming the path, and the refused place is left exactly as it was.
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <map>
#include <thread>

#include "sim/output/temporary.hpp"
#include "support/process_group.hpp"
#include "support/cli.hpp"

using namespace aggsim::test;
namespace fs = std::filesystem;

namespace {

const char* kScenario = R"(name: safety
seed: 3
ranks: 4
steps: 2
platform: {topology: cluster, hosts: 8, bandwidth: 10Gbps, latency: 1us}
network: alpha_beta
model: {size: 1MB, proxy_dim: 64}
algorithm: {name: ring_allreduce, op: avg}
)";

// About a second of CPU time or more: long enough to be interrupted, or to tell a refusal made
// before simulating from one made after (every step simulated: no replay).
const char* kSlowScenario = R"(name: slow
seed: 3
ranks: 64
steps: 60
platform: {topology: cluster, hosts: 64, bandwidth: 10Gbps, latency: 1us}
network: alpha_beta
model: {size: 64MB, math: off}
algorithm: {name: ring_allreduce, op: avg}
engine: {replay: false}
)";

// Names in `dir`, recursively, with their content: a snapshot to compare before and after.
std::map<std::string, std::string> snapshot(const fs::path& dir) {
  std::map<std::string, std::string> files;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    files[fs::relative(e.path(), dir).string()] = e.is_regular_file() ? read_file(e.path()) : "<dir>";
  return files;
}

void check_refused(const CliResult& r, const std::string& path_in_message) {
  INFO(r.err);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::StartsWith("aggsim: error: "));
  CHECK_THAT(r.err, Catch::Contains(path_in_message));
  CHECK_THAT(r.err, !Catch::Contains("internal error"));
}

}  // namespace

TEST_CASE("run --out refuses a file, the working directory, its parents and / without deleting anything",
          "[outputs][safety]") {
  const auto dir = fresh_dir("safety-places");
  write_file(dir / "work/s.yaml", kScenario);
  write_file(dir / "work/somefile.txt", "precious\n");
  write_file(dir / "work/notes/a.txt", "mine\n");
  const auto before = snapshot(dir);
  for (const std::string out : {"somefile.txt", ".", "..", "/", "./", "../..", "notes"}) {
    INFO("--out " << out);
    check_refused(run_aggsim({"run", "s.yaml", "--out", out}, dir / "work"), out);
  }
  CHECK(snapshot(dir) == before);
}

TEST_CASE("output.dir in a scenario cannot replace a folder aggsim did not write, nor the scenario's own",
          "[outputs][safety]") {
  const auto dir = fresh_dir("safety-victim");
  write_file(dir / "victim/data.txt", "results of a month\n");
  write_file(dir / "work/notes/a.txt", "mine\n");
  write_file(dir / "work/sub/s.yaml", std::string(kScenario) + "output: {dir: ../victim}\n");
  write_file(dir / "work/sub/t.yaml", std::string(kScenario) + "output: {dir: sub}\n");
  const auto before = snapshot(dir);
  check_refused(run_aggsim({"run", "sub/s.yaml"}, dir / "work"), "victim");
  // The folder that holds the scenario itself.
  check_refused(run_aggsim({"run", "sub/t.yaml"}, dir / "work"), "sub");
  check_refused(run_aggsim({"run", "sub/s.yaml", "--out", "sub"}, dir / "work"), "sub");
  CHECK(snapshot(dir) == before);
  // An empty folder, or one aggsim wrote, may be written.
  fs::create_directories(dir / "work/empty");
  REQUIRE(run_aggsim({"run", "sub/s.yaml", "--out", "empty"}, dir / "work").exit_code == 0);
  CHECK(fs::exists(dir / "work/empty/.aggsim-run"));
  REQUIRE(run_aggsim({"run", "sub/s.yaml", "--out", "empty"}, dir / "work").exit_code == 0);
  // A run folder cannot be given as a sweep folder, nor the reverse.
  write_file(dir / "work/sw.yaml", std::string(kScenario) + "sweep:\n  grid:\n    ranks: [2, 4]\n");
  check_refused(run_aggsim({"sweep", "expand", "sw.yaml", "--out", "empty"}, dir / "work"), "empty");
  REQUIRE(run_aggsim({"sweep", "expand", "sw.yaml", "--out", "sweep"}, dir / "work").exit_code == 0);
  check_refused(run_aggsim({"run", "sub/s.yaml", "--out", "sweep"}, dir / "work"), "sweep");
  check_refused(run_aggsim({"sweep", "expand", "sw.yaml", "--out", "notes"}, dir / "work"), "notes");
}

TEST_CASE("symbolic link loops, over-long names and non-folders in the path are input errors",
          "[outputs][safety]") {
  const auto dir = fresh_dir("safety-paths");
  write_file(dir / "s.yaml", kScenario);
  write_file(dir / "plain.txt", "x\n");
  fs::create_symlink("loop", dir / "loop");
  fs::create_directories(dir / "real");
  fs::create_symlink("real", dir / "link");
  check_refused(run_aggsim({"run", "s.yaml", "--out", "loop"}, dir), "loop");
  check_refused(run_aggsim({"run", "s.yaml", "--out", "loop/run"}, dir), "loop");
  check_refused(run_aggsim({"run", "s.yaml", "--out", "link"}, dir), "link");
  const std::string longname(300, 'a');
  check_refused(run_aggsim({"run", "s.yaml", "--out", "out/" + longname}, dir), longname.substr(0, 40));
  check_refused(run_aggsim({"run", "s.yaml", "--out", "plain.txt/run"}, dir), "plain.txt");
  CHECK(read_file(dir / "plain.txt") == "x\n");
  CHECK(fs::is_empty(dir / "real"));
  CHECK(!fs::exists(dir / "out"));
}

namespace {

// Runs aggsim in `dir` and returns the CPU time (user + system) it used, in seconds.
double cpu_seconds_of(const std::vector<std::string>& args, const fs::path& dir, int& exit_code) {
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    if (chdir(dir.c_str()) != 0) _exit(127);
    std::vector<char*> argv = {const_cast<char*>("aggsim")};
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(AGGSIM_BIN, argv.data());
    _exit(127);
  }
  int status = 0;
  rusage usage{};
  wait4(pid, &status, 0, &usage);
  exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
         1e-6 * static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec);
}

}  // namespace

TEST_CASE("an unwritable output location is refused before simulating", "[outputs][safety]") {
  const auto dir = fresh_dir("safety-unwritable");
  write_file(dir / "slow.yaml", kSlowScenario);
  write_file(dir / "plain.txt", "x\n");
  const auto r = run_aggsim({"run", "slow.yaml", "--out", "plain.txt/sub/run"}, dir);
  check_refused(r, "plain.txt");
  CHECK_THAT(r.err, Catch::Contains("Not a directory"));
  // CPU time, not wall time: robust to a loaded machine. The simulation alone takes most of a
  // second or more (checked on the same scenario); a refusal that cheap never simulated.
  int code = -1;
  const double refused = cpu_seconds_of({"run", "slow.yaml", "--out", "plain.txt/sub/run"}, dir, code);
  CHECK(code == 2);
  const double ran = cpu_seconds_of({"run", "slow.yaml", "--out", "run", "-q"}, dir, code);
  REQUIRE(code == 0);
  INFO("refused after " << refused << " s of CPU, a run takes " << ran << " s");
  CHECK(ran > 0.5);
  CHECK(refused < ran / 4);
}

TEST_CASE("a rerun with a different scenario needs --force, an identical one replaces the folder",
          "[outputs][safety]") {
  const auto dir = fresh_dir("safety-force");
  write_file(dir / "s.yaml", kScenario);
  REQUIRE(run_aggsim({"run", "s.yaml", "--out", "run"}, dir).exit_code == 0);
  const auto before = snapshot(dir / "run");
  REQUIRE(run_aggsim({"run", "s.yaml", "--out", "run"}, dir).exit_code == 0);  // identical: replaced
  CHECK(snapshot(dir / "run") == before);
  const auto r = run_aggsim({"run", "s.yaml", "--out", "run", "--set", "ranks=2"}, dir);
  check_refused(r, "run");
  CHECK_THAT(r.err, Catch::Contains("--force"));
  CHECK_THAT(r.err, Catch::Contains("--out"));
  CHECK(snapshot(dir / "run") == before);
  REQUIRE(run_aggsim({"run", "s.yaml", "--out", "run", "--set", "ranks=2", "--force"}, dir).exit_code == 0);
  CHECK_THAT(read_file(dir / "run/resolved.yaml"), Catch::Contains("ranks: 2"));
}

TEST_CASE("temporaries of dead processes are removed, live or other hosts' ones are kept",
          "[outputs][safety]") {
  const auto dir = fresh_dir("safety-stale");
  write_file(dir / "s.yaml", kScenario);
  // A temporary of a process that ended without removing it (as a SIGKILL leaves it).
  std::fflush(nullptr);
  const pid_t dead = fork();
  if (dead == 0) {
    new aggsim::Temporary(dir, "run");
    _exit(0);
  }
  waitpid(dead, nullptr, 0);
  const auto ours = [&](const std::string& name) {
    std::vector<fs::path> found;
    for (const auto& e : fs::directory_iterator(dir))
      if (e.path().filename().string().rfind("." + name + ".tmp-", 0) == 0) found.push_back(e.path());
    return found;
  };
  REQUIRE(ours("run").size() == 1);
  const fs::path stale = ours("run").front();
  // The same temporary as another host's: its name says so, and its process may still run there.
  std::string other_name = stale.filename().string();
  const auto at = other_name.find(".tmp-") + 5;
  other_name.replace(at, other_name.find('-', at) - at, "otherhost");
  fs::create_directory(dir / other_name);
  fs::copy(stale, dir / other_name, fs::copy_options::recursive);
  const aggsim::Temporary live(dir, "live");  // this process's: running
  REQUIRE(run_aggsim({"run", "s.yaml", "--out", "run"}, dir).exit_code == 0);
  CHECK(!fs::exists(stale));
  CHECK(fs::exists(live.path()));
  CHECK(fs::exists(dir / other_name));
}

TEST_CASE("SIGINT or SIGTERM during a run leaves no temporary and no partial folder", "[outputs][safety]") {
  for (const int sig : {SIGINT, SIGTERM}) {
    INFO("signal " << sig);
    const auto dir = fresh_dir("safety-signal");
    write_file(dir / "slow.yaml", kSlowScenario);
    std::fflush(nullptr);
    const pid_t pid = fork();
    if (pid == 0) {
      if (chdir(dir.c_str()) != 0) _exit(127);
      if (!std::freopen("/dev/null", "w", stdout) || !std::freopen("/dev/null", "w", stderr)) _exit(127);
      execl(AGGSIM_BIN, "aggsim", "run", "slow.yaml", "--out", "out/run", "-q", static_cast<char*>(nullptr));
      _exit(127);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(700));
    kill(pid, sig);
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(!(WIFEXITED(status) && WEXITSTATUS(status) == 0));  // interrupted, not finished
    CHECK(temporaries(dir).empty());
    // No run folder: at most the empty parent folder the run made (removing it again would race
    // with parallel points of a sweep writing into it).
    CHECK(!fs::exists(dir / "out/run"));
    CHECK((!fs::exists(dir / "out") || fs::is_empty(dir / "out")));
  }
}

TEST_CASE("runs racing to the same folder all succeed and leave no temporary or old copy",
          "[outputs][safety]") {
  const auto dir = fresh_dir("safety-race");
  write_file(dir / "s.yaml", kScenario);
  std::vector<pid_t> pids;
  std::fflush(nullptr);
  for (int i = 0; i < 4; ++i) {
    const pid_t pid = fork();
    if (pid == 0) {
      if (chdir(dir.c_str()) != 0) _exit(127);
      execl(AGGSIM_BIN, "aggsim", "run", "s.yaml", "--out", "run", "-q", static_cast<char*>(nullptr));
      _exit(127);
    }
    pids.push_back(pid);
  }
  for (pid_t pid : pids) {
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 0));
  }
  CHECK(temporaries(dir).empty());
  CHECK(fs::exists(dir / "run/summary.json"));
}

TEST_CASE("a folder is aggsim's only if its marker is a regular file with aggsim's text",
          "[outputs][safety]") {
  const auto dir = fresh_dir("safety-marker");
  write_file(dir / "s.yaml", kScenario);
  write_file(dir / "elsewhere/.aggsim-run",
             "This folder was written by aggsim, which may replace it whole.\n");
  // An empty marker (a person's `touch`, or an old run folder), a symbolic link to a genuine marker,
  // a marker with other text: each folder holds someone's data.
  write_file(dir / "empty/.aggsim-run", "");
  write_file(dir / "linked/data.txt", "keep\n");
  fs::create_symlink(dir / "elsewhere/.aggsim-run", dir / "linked/.aggsim-run");
  write_file(dir / "other/.aggsim-run", "not aggsim\n");
  for (const std::string folder : {"empty", "linked", "other"})
    write_file(dir / folder / "data.txt", "keep\n");
  const auto before = snapshot(dir);
  for (const std::string folder : {"empty", "linked", "other"})
    for (const bool force : {false, true}) {
      INFO(folder << (force ? " --force" : ""));
      std::vector<std::string> args = {"run", "s.yaml", "--out", folder};
      if (force) args.push_back("--force");
      const auto r = run_aggsim(args, dir);
      check_refused(r, folder);
      if (folder == "empty") {
        CHECK_THAT(r.err, Catch::Contains("its .aggsim-run marker is empty"));
        CHECK_THAT(r.err, Catch::Contains("confirm it with: echo 'This folder was written by aggsim' > '" +
                                          folder + "/.aggsim-run'"));
      } else {
        CHECK_THAT(r.err, Catch::Contains("is a symbolic link, not a regular file, or does not hold aggsim's "
                                          "marker text"));
      }
    }
  // The sweep marker is held to the same rule.
  write_file(dir / "sweep/.aggsim-sweep", "");
  write_file(dir / "sweep/data.txt", "keep\n");
  check_refused(run_aggsim({"sweep", "expand", "sw.yaml", "--out", "sweep"}, dir), "sweep");
  fs::remove_all(dir / "sweep");
  CHECK(snapshot(dir) == before);
  // The command the message gives, run as it is, makes the folder replaceable, also when the
  // folder's name holds a quote.
  for (const std::string folder : {"empty", "it's empty"}) {
    INFO(folder);
    write_file(dir / folder / ".aggsim-run", "");
    write_file(dir / folder / "data.txt", "keep\n");
    const auto refused = run_aggsim({"run", "s.yaml", "--out", folder, "--force"}, dir);
    const std::string lead = "confirm it with: ", tail = ", then run again";
    const auto from = refused.err.find(lead), to = refused.err.find(tail);
    REQUIRE(from != std::string::npos);
    REQUIRE(to != std::string::npos);
    const std::string command = refused.err.substr(from + lead.size(), to - from - lead.size());
    REQUIRE(std::system(("cd " + shell_quote(dir.string()) + " && " + command).c_str()) == 0);
    const auto r = run_aggsim({"run", "s.yaml", "--out", folder, "--force"}, dir);
    INFO(r.err);
    CHECK(r.exit_code == 0);
    CHECK(fs::exists(dir / folder / "summary.json"));
    CHECK(!fs::exists(dir / folder / "data.txt"));
  }
}

TEST_CASE("run folders whose marker is empty stay readable: a sweep counts their points as done",
          "[outputs][safety]") {
  const auto dir = fresh_dir("safety-old-marker");
  write_file(dir / "sw.yaml", std::string(kScenario) + "sweep:\n  grid:\n    ranks: [2, 4]\n");
  REQUIRE(run_aggsim({"sweep", "run", "sw.yaml", "--out", "sweep", "--jobs", "1"}, dir).exit_code == 0);
  for (const auto& e : fs::directory_iterator(dir / "sweep/runs"))
    write_file(e.path() / ".aggsim-run", "");  // as an older tool left them
  const auto merged = run_aggsim({"sweep", "merge", "sw.yaml", "--out", "sweep"}, dir);
  INFO(merged.err);
  CHECK(merged.exit_code == 0);
  CHECK_THAT(merged.err, Catch::Contains("2 done, 0 failed, 0 pending"));
}
