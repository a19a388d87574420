// Sweeps under damage: a corrupt summary.json, writes that fail (a full disk, simulated with a
// file-size limit), a runner killed alone, two runners on one folder, a point killed in Slurm.
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <functional>
#include <thread>

#include "sweep_support.hpp"

using namespace aggsim::test;
namespace fs = std::filesystem;

namespace {

std::string status_of(const fs::path& results, const std::string& id, std::string* error = nullptr) {
  const std::string csv = read_file(results);
  std::istringstream in(csv);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(id + ",", 0) == 0) {
      if (error) *error = line;
      return line.substr(id.size() + 1, line.find(',', id.size() + 1) - id.size() - 1);
    }
  return "";
}

// Points slow enough to be caught running (a second or more of CPU each).
const char* kSlowSweep = "  grid:\n    steps: [60, 61, 62, 63]\n";
const char* kSlowBase = R"(name: slow
seed: 5
ranks: 64
steps: 2
platform: {topology: cluster, hosts: 64, bandwidth: 10Gbps, latency: 1us}
network: alpha_beta
model: {size: 64MB, math: off}
algorithm: {name: ring_allreduce, op: avg}
sweep:
)";

}  // namespace

TEST_CASE("a damaged summary.json makes its point unfinished: merge names the file, run reruns it",
          "[sweep][robust]") {
  const auto dir = fresh_dir("damaged");
  write_file(dir / "sweep.yaml", small_sweep("  grid:\n    ranks: [2, 4]\n"));
  REQUIRE(run_aggsim({"sweep", "run", "sweep.yaml", "--out", "out"}, dir).exit_code == 0);
  const auto ids = finished_points(dir / "out");
  REQUIRE(ids.size() == 2);
  const std::string id = *ids.begin();
  const fs::path summary = dir / "out/runs" / id / "summary.json";
  const std::string good = read_file(summary);
  write_file(summary, good.substr(0, good.size() / 2));  // cut short, as by a crash mid-write elsewhere
  const auto merged = run_aggsim({"sweep", "merge", "sweep.yaml", "--out", "out"}, dir);
  INFO(merged.err);
  CHECK(merged.exit_code == 1);  // a failed point
  CHECK_THAT(merged.err, !Catch::Contains("internal error"));
  std::string row;
  CHECK(status_of(dir / "out/results.csv", id, &row) == "failed");
  CHECK_THAT(row, Catch::Contains("runs/" + id + "/summary.json"));
  const auto rerun = run_aggsim({"sweep", "run", "sweep.yaml", "--out", "out"}, dir);
  INFO(rerun.err);
  CHECK(rerun.exit_code == 0);
  CHECK_THAT(rerun.err, Catch::Contains("1 already done, 1 to run"));
  CHECK(read_file(summary) == good);
  CHECK(status_of(dir / "out/results.csv", id) == "done");
}

TEST_CASE("failed writes (a full disk) leave no temporary and no running child", "[sweep][robust]") {
  const auto dir = fresh_dir("fulldisk");
  write_file(dir / "sweep.yaml", small_sweep("  grid:\n    ranks: [2, 3, 4, 6]\n"));
  REQUIRE(run_aggsim({"sweep", "expand", "sweep.yaml", "--out", "out"}, dir).exit_code == 0);
  // A file-size limit makes every write past 300 bytes fail (EFBIG) in the runner and its children,
  // as a full disk would; SIGXFSZ is ignored so that the write fails instead of killing the writer.
  for (const rlim_t limit : {rlim_t(300), rlim_t(0)}) {
    INFO("file size limit " << limit);
    std::fflush(nullptr);
    const pid_t pid = fork();
    if (pid == 0) {
      setpgid(0, 0);
      if (chdir(dir.c_str()) != 0) _exit(127);
      if (!std::freopen("runner.log", "w", stderr) || !std::freopen("/dev/null", "w", stdout)) _exit(127);
      signal(SIGXFSZ, SIG_IGN);
      const rlimit rl{limit, limit};
      setrlimit(RLIMIT_FSIZE, &rl);
      execl(AGGSIM_BIN, "aggsim", "sweep", "run", "sweep.yaml", "--out", "out", "--jobs", "2",
            static_cast<char*>(nullptr));
      _exit(127);
    }
    setpgid(pid, pid);
    int status = 0;
    waitpid(pid, &status, 0);
    const std::string log = read_file(dir / "runner.log");
    INFO(log);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) != 0);
    CHECK_THAT(log, !Catch::Contains("internal error"));
    CHECK(!group_alive(pid));  // every child was waited for
    CHECK(temporaries(dir / "out").empty());
    CHECK(finished_points(dir / "out").empty());
  }
  // With room again, the sweep completes.
  CHECK(run_aggsim({"sweep", "run", "sweep.yaml", "--out", "out"}, dir).exit_code == 0);
  CHECK(finished_points(dir / "out").size() == 4);
  CHECK(temporaries(dir / "out").empty());
}

TEST_CASE("a sweep expanded on a full disk can be rerun once space is back", "[sweep][robust]") {
  // The expansion interrupted at every point a full disk can stop it: before any file (limit 0),
  // after the marker but before the points (the marker is 130 bytes, a point's scenario 575), and
  // after the points but before the manifests (manifest.json is 702). A file-size limit stands for
  // the full disk (EFBIG, SIGXFSZ ignored); with no room at all stderr's file stays empty too.
  for (const rlim_t limit : {rlim_t(0), rlim_t(200), rlim_t(600)}) {
    INFO("file size limit " << limit);
    const auto dir = fresh_dir("full-disk-expand");
    write_file(dir / "sweep.yaml", small_sweep("  grid:\n    ranks: [2, 3, 4, 6]\n"));
    std::fflush(nullptr);
    const pid_t pid = fork();
    if (pid == 0) {
      if (chdir(dir.c_str()) != 0) _exit(127);
      if (!std::freopen("expand.log", "w", stderr) || !std::freopen("/dev/null", "w", stdout)) _exit(127);
      signal(SIGXFSZ, SIG_IGN);
      const rlimit rl{limit, limit};
      setrlimit(RLIMIT_FSIZE, &rl);
      execl(AGGSIM_BIN, "aggsim", "sweep", "expand", "sweep.yaml", "--out", "out",
            static_cast<char*>(nullptr));
      _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    const std::string log = read_file(dir / "expand.log");
    INFO(log);
    CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 2));
    if (limit > 0) CHECK_THAT(log, Catch::StartsWith("aggsim: error: "));
    if (fs::exists(dir / "out")) CHECK(temporaries(dir / "out").empty());
    // Space is back: the same command completes the folder, and a run finishes every point.
    const auto again = run_aggsim({"sweep", "expand", "sweep.yaml", "--out", "out"}, dir);
    INFO(again.err);
    CHECK(again.exit_code == 0);
    CHECK(run_aggsim({"sweep", "run", "sweep.yaml", "--out", "out"}, dir).exit_code == 0);
    CHECK(finished_points(dir / "out").size() == 4);
  }
}

TEST_CASE("killing only the sweep runner stops its children, a second runner is refused", "[sweep][robust]") {
  const auto dir = fresh_dir("orphans");
  write_file(dir / "sweep.yaml", std::string(kSlowBase) + kSlowSweep);
  const pid_t runner = start_group(
      "cd " + shell_quote(dir.string()) + " && " +
      aggsim_command({"sweep", "run", "sweep.yaml", "--out", "out", "--jobs", "2"}, dir / "runner.log"));
  // The shell execs aggsim, so `runner` is the runner itself; wait for two children to start.
  auto running_children = [&] {
    std::size_t n = 0;
    if (fs::is_directory(dir / "out/logs"))
      for (const auto& e : fs::directory_iterator(dir / "out/logs")) n += e.path().extension() == ".stderr";
    return n;
  };
  REQUIRE(wait_until(60, [&] { return running_children() == 2; }));
  // Meanwhile a second runner on the same folder is refused: it would run the same points.
  const auto second = run_aggsim({"sweep", "run", "sweep.yaml", "--out", "out"}, dir);
  CHECK(second.exit_code == 2);
  CHECK_THAT(second.err, Catch::Contains("another 'aggsim sweep run'"));
  const auto done_before = finished_points(dir / "out");
  ::kill(runner, SIGKILL);  // the runner only, not its group
  int status = 0;
  waitpid(runner, &status, 0);
  CHECK(wait_until(30, [&] { return !group_alive(runner); }));  // the children followed it
  CHECK(temporaries(dir / "out").empty());
  CHECK(finished_points(dir / "out") == done_before);  // nothing finished after the kill
  const auto rerun = run_aggsim({"sweep", "run", "sweep.yaml", "--out", "out", "--jobs", "2"}, dir);
  INFO(rerun.err);
  CHECK(rerun.exit_code == 0);
  CHECK(finished_points(dir / "out").size() == 4);
  ::kill(-runner, SIGKILL);  // only if the check above failed: leave nothing behind
}

TEST_CASE("a point killed inside a Slurm task shows as failed with its log, not pending",
          "[sweep][robust][slurm]") {
  const auto dir = fresh_dir("slurm-killed");
  write_file(dir / "sweep.yaml", std::string(kSlowBase) + "  grid:\n    steps: [60, 3]\n");
  REQUIRE(run_aggsim({"sweep", "slurm", "sweep.yaml", "--out", "out"}, dir).exit_code == 0);
  fs::path script;
  for (const auto& e : fs::directory_iterator(dir / "out/slurm"))
    if (e.path().extension() == ".sbatch") script = e.path();
  REQUIRE(!script.empty());
  // Array task 0 holds the heavy point (balanced: one point per task). Run it as Slurm would, then
  // kill the whole task as Slurm does at its time limit.
  const pid_t task = start_group("cd " + shell_quote(dir.string()) +
                                 " && exec env SLURM_ARRAY_JOB_ID=41 SLURM_ARRAY_TASK_ID=0 bash " +
                                 shell_quote(script.string()) + " > task.log 2>&1");
  REQUIRE(
      wait_until(60, [&] { return fs::exists(dir / "out/failed") && !fs::is_empty(dir / "out/failed"); }));
  ::kill(-task, SIGKILL);
  int status = 0;
  waitpid(task, &status, 0);
  REQUIRE(wait_until(10, [&] { return !group_alive(task); }));
  run_aggsim({"sweep", "merge", "sweep.yaml", "--out", "out"}, dir);
  const std::string results = read_file(dir / "out/results.csv");
  INFO(results);
  CHECK_THAT(results, Catch::Contains(",failed,"));
  CHECK_THAT(results, Catch::Contains("out/slurm/logs/41_0.out"));
  CHECK_THAT(read_file(dir / "task.log"), Catch::Contains("aggsim: point "));
}
