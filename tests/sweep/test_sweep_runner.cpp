// The local sweep runner: resume after SIGKILL loses nothing, parallel equals serial, failures are recorded.
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <thread>

#include "sweep_support.hpp"

using namespace aggsim::test;
namespace fs = std::filesystem;

namespace {

// 10 points; each is a 16-rank ring all-reduce (30 steps) so a point takes a noticeable moment.
const std::string kTenPoints = R"(  grid:
    ranks: [8, 16]
    model.size: [1MB, 2MB, 3MB, 4MB, 5MB]
)";

std::string sweep_file(const fs::path& dir) {
  std::string text = small_sweep(kTenPoints);
  text.replace(text.find("steps: 2\n"), 9, "steps: 30\n");
  write_file(dir / "sweep.yaml", text);
  return (dir / "sweep.yaml").string();
}

double run_timed(const std::vector<std::string>& args, aggsim::test::CliResult& r) {
  const auto t0 = std::chrono::steady_clock::now();
  r = run_aggsim(args);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

TEST_CASE("a sweep killed mid-run resumes: every point done exactly once, results equal an uninterrupted run",
          "[sweep][runner]") {
  const auto dir = fresh_dir("resume");
  const std::string file = sweep_file(dir);
  const fs::path whole = dir / "whole", killed = dir / "killed";

  aggsim::test::CliResult reference;
  run_timed({"sweep", "run", file, "--jobs", "1", "--out", whole.string()}, reference);
  REQUIRE(reference.exit_code == 0);
  REQUIRE(finished_points(whole).size() == 10);

  // Start the same sweep in its own process group; SIGKILL the whole group after 3 points finish.
  const pid_t group = start_group(
      aggsim_command({"sweep", "run", file, "--jobs", "2", "--out", killed.string()}, dir / "killed.log"));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (finished_points(killed).size() < 3 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  REQUIRE(::kill(-group, SIGKILL) == 0);
  int status = 0;
  ::waitpid(group, &status, 0);
  REQUIRE(WIFSIGNALED(status));
  const auto before = finished_points(killed);
  INFO("finished before the kill: " << before.size());
  REQUIRE(before.size() >= 3);
  REQUIRE(before.size() < 10);
  std::map<std::string, fs::file_time_type> stamps;
  for (const auto& id : before) stamps[id] = fs::last_write_time(killed / "runs" / id / "summary.json");

  aggsim::test::CliResult resumed;
  run_timed({"sweep", "run", file, "--jobs", "2", "--out", killed.string()}, resumed);
  INFO(resumed.err);
  REQUIRE(resumed.exit_code == 0);
  CHECK_THAT(resumed.err,
             Catch::Contains(fmt::format("{} already done, {} to run", before.size(), 10 - before.size())));
  // Points finished before the kill were not run again; the others ran once each.
  for (const auto& [id, stamp] : stamps) {
    CHECK(fs::last_write_time(killed / "runs" / id / "summary.json") == stamp);
    CHECK(resumed.err.find("done " + id) == std::string::npos);
  }
  for (const auto& id : finished_points(whole)) {
    if (before.count(id)) continue;
    std::size_t count = 0;
    for (auto pos = resumed.err.find("done " + id); pos != std::string::npos;
         pos = resumed.err.find("done " + id, pos + 1))
      ++count;
    CHECK(count == 1);
  }
  CHECK(finished_points(killed) == finished_points(whole));
  // No half-written run folder survives.
  for (const auto& e : fs::directory_iterator(killed / "runs")) {
    INFO("left in runs/: " << e.path().filename().string());
    CHECK(e.path().filename().string()[0] != '.');
  }
  CHECK(read_file(killed / "results.csv") == read_file(whole / "results.csv"));
  const auto rows = read_csv(whole / "results.csv");
  REQUIRE(rows.size() == 11);
  for (std::size_t i = 1; i < rows.size(); ++i) CHECK(rows[i][1] == "done");
}

TEST_CASE("SIGTERM to the runner stops its children, keeps finished points and merges them",
          "[sweep][runner]") {
  const auto dir = fresh_dir("sigterm");
  const std::string file = sweep_file(dir);
  const fs::path out = dir / "out";
  const pid_t runner = start_group(
      aggsim_command({"sweep", "run", file, "--jobs", "2", "--out", out.string()}, dir / "run.log"));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (finished_points(out).size() < 2 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  REQUIRE(::kill(runner, SIGTERM) == 0);  // the runner alone, not its process group
  int status = 0;
  ::waitpid(runner, &status, 0);
  INFO(read_file(dir / "run.log"));
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 130);
  CHECK_THAT(read_file(dir / "run.log"), Catch::Contains("interrupted"));
  // No child outlives the runner.
  CHECK(::kill(-runner, 0) == -1);
  const auto done = finished_points(out);
  std::size_t done_rows = 0;
  for (const auto& row : read_csv(out / "results.csv")) done_rows += row.at(1) == "done";
  CHECK(done_rows == done.size());
  const auto rerun = run_aggsim({"sweep", "run", file, "--jobs", "2", "--out", out.string()});
  CHECK(rerun.exit_code == 0);
  CHECK(finished_points(out).size() == 10);
}

TEST_CASE("two parallel jobs give the same results as one (wall-time ratio printed)",
          "[sweep][runner][bench]") {
  const auto dir = fresh_dir("parallel");
  const std::string file = sweep_file(dir);
  aggsim::test::CliResult one, two;
  const double t1 = run_timed({"sweep", "run", file, "--jobs", "1", "--out", (dir / "j1").string()}, one);
  const double t2 = run_timed({"sweep", "run", file, "--jobs", "2", "--out", (dir / "j2").string()}, two);
  REQUIRE(one.exit_code == 0);
  REQUIRE(two.exit_code == 0);
  CHECK(read_file(dir / "j1/results.csv") == read_file(dir / "j2/results.csv"));
  for (const auto& id : finished_points(dir / "j1"))
    for (const char* f : {"summary.json", "steps.csv", "resolved.yaml"})
      CHECK(read_file(dir / "j1/runs" / id / f) == read_file(dir / "j2/runs" / id / f));
  // Checks the merged numbers against the ring's closed form 2(p-1)(alpha + S/p/beta).
  const auto rows = read_csv(dir / "j1/results.csv");
  const int ranks = column(rows, "ranks"), size = column(rows, "model_bytes"),
            mean = column(rows, "mean_step_time_s");
  REQUIRE(ranks >= 0);
  REQUIRE(size >= 0);
  REQUIRE(mean >= 0);
  for (std::size_t i = 1; i < rows.size(); ++i) {
    const double p = std::stod(rows[i][static_cast<std::size_t>(ranks)]);
    const double s = std::stod(rows[i][static_cast<std::size_t>(size)]);
    CHECK(std::stod(rows[i][static_cast<std::size_t>(mean)]) ==
          Approx(2 * (p - 1) * (2e-6 + s / p / 1.25e9)).epsilon(1e-9));
  }
  WARN(fmt::format(
      "benchmark: sweep of 10 points: --jobs 1 {:.2f} s, --jobs 2 {:.2f} s, ratio {:.2f} ({} CPUs)", t1, t2,
      t2 / t1, std::thread::hardware_concurrency()));
}

TEST_CASE("a point that fails at run time is recorded with its error and retried on the next run",
          "[sweep][runner]") {
  const auto dir = fresh_dir("failure");
  write_file(dir / "good.xml", read_file(fs::path(AGGSIM_SOURCE_DIR) / "platforms/cluster_16.xml"));
  write_file(dir / "bad.xml",
             "<?xml version='1.0'?>\n<platform version=\"4.1\">\n  <cluster id=\"c\"\n</platform>\n");
  const std::string text =
      small_sweep("  grid:\n    platform: [{file: good.xml}, {file: bad.xml}]\n    ranks: [2, 4]\n");
  write_file(dir / "sweep.yaml", text);
  const std::string out = (dir / "out").string();
  auto r = run_aggsim({"sweep", "run", "sweep.yaml", "--jobs", "2", "--out", out}, dir);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Catch::Contains("2 done, 2 failed, 0 pending"));
  auto rows = read_csv(dir / "out/results.csv");
  const int status = column(rows, "status"), file = column(rows, "platform");
  REQUIRE(rows.size() == 5);
  for (std::size_t i = 1; i < rows.size(); ++i) {
    const bool bad = rows[i][static_cast<std::size_t>(file)].find("bad.xml") != std::string::npos;
    CHECK(rows[i][static_cast<std::size_t>(status)] == (bad ? "failed" : "done"));
    if (bad)
      CHECK_THAT(read_file(dir / "out/failed" / (rows[i][0] + ".log")),
                 Catch::Contains("malformed platform XML"));
    if (bad)
      CHECK_THAT(read_file(dir / "out/results.csv"), Catch::Contains("bad.xml:4:1: malformed platform XML"));
  }
  // Repair the platform: the next run only runs the two failed points, and clears their failure records.
  write_file(dir / "bad.xml", read_file(dir / "good.xml"));
  r = run_aggsim({"sweep", "run", "sweep.yaml", "--jobs", "2", "--out", out}, dir);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.err,
             Catch::Contains("2 already done, 2 to run") && Catch::Contains("4 done, 0 failed, 0 pending"));
  const bool failures_left = fs::exists(dir / "out/failed") && !fs::is_empty(dir / "out/failed");
  CHECK_FALSE(failures_left);
}

TEST_CASE("sweep run --point runs one point, and skips it once finished", "[sweep][runner]") {
  const auto dir = fresh_dir("point");
  write_file(dir / "s.yaml", small_sweep("  grid: {ranks: [2, 4]}\n"));
  const std::string out = (dir / "out").string();
  REQUIRE(run_aggsim({"sweep", "expand", "s.yaml", "--out", out}, dir).exit_code == 0);
  const auto rows = read_csv(dir / "out/manifest.csv");
  const std::string id = rows.at(2).at(1);
  // Without points/ (e.g. a fresh node), the point is found by expanding the sweep.
  fs::remove_all(dir / "out/points");
  auto r = run_aggsim({"sweep", "run", "s.yaml", "--point", id, "--out", out}, dir);
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(finished_points(dir / "out") == std::set<std::string>{id});
  CHECK_THAT(read_file(dir / "out/runs" / id / "resolved.yaml"), Catch::Contains("ranks: 4"));
  r = run_aggsim({"sweep", "run", "s.yaml", "--point", id, "--out", out}, dir);
  CHECK_THAT(r.out, Catch::Contains("already finished"));
  r = run_aggsim({"sweep", "run", "s.yaml", "--point", "000000000000", "--out", out}, dir);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains("no point with id 000000000000"));
  r = run_aggsim({"sweep", "merge", "s.yaml", "--out", out}, dir);
  CHECK_THAT(r.err, Catch::Contains("1 done, 0 failed, 1 pending"));
}
