// The same sweep as a real Slurm job array (a private one-node Slurm started by slurm_array.sh, with
// a merge job submitted after it) and with the local runner: results.csv must be identical.
// Skipped, saying why, when Slurm is absent.
#include <catch2/catch.hpp>

#include "sweep_support.hpp"

using namespace aggsim::test;
namespace fs = std::filesystem;

TEST_CASE("a sweep run as a Slurm job array merges to the local runner's results.csv", "[sweep][slurm]") {
  const auto dir = fresh_dir("slurm");
  // 5 points in chunks of 2: three array tasks, the last one short.
  write_file(dir / "sweep.yaml", small_sweep("  grid:\n    ranks: [2, 3, 4, 6, 8]\n"));
  const auto local = run_aggsim({"sweep", "run", "sweep.yaml", "--jobs", "2", "--out", "local"}, dir);
  REQUIRE(local.exit_code == 0);

  const fs::path script = fs::path(AGGSIM_SOURCE_DIR) / "tests/sweep/slurm_array.sh";
  const std::string cmd = "cd " + shell_quote(dir.string()) + " && " + shell_quote(script.string()) + " " +
                          shell_quote(AGGSIM_BIN) + " sweep.yaml slurm > slurm.log 2>&1";
  const int status = std::system(cmd.c_str());
  const std::string log = read_file(dir / "slurm.log");
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (code == 77) {
    // ctest reports this test as skipped (SKIP_REGULAR_EXPRESSION in tests/CMakeLists.txt).
    WARN(log.substr(log.find("SKIPPED:")));
    return;
  }
  INFO(log);
  REQUIRE(code == 0);
  CHECK_THAT(log, Catch::Contains("#SBATCH --array=0-2%2"));  // --max-running 2
  CHECK_THAT(log, Catch::Contains("#SBATCH --mem=200M") && Catch::Contains("#SBATCH --comment=aggsim-test"));
  CHECK(finished_points(dir / "slurm") == finished_points(dir / "local"));
  CHECK(read_file(dir / "slurm/results.csv") == read_file(dir / "local/results.csv"));
  const auto rows = read_csv(dir / "slurm/results.csv");
  REQUIRE(rows.size() == 6);
  for (std::size_t i = 1; i < rows.size(); ++i) CHECK(rows[i][1] == "done");
  // One log per array task, naming the points it ran; and the merge job's log.
  std::size_t logs = 0, merge_logs = 0;
  std::string task_logs;
  for (const auto& e : fs::directory_iterator(dir / "slurm/slurm/logs")) {
    const std::string name = e.path().filename().string();
    if (name.rfind("merge_", 0) == 0) {
      ++merge_logs;
    } else if (e.path().extension() == ".out") {
      ++logs;
      task_logs += read_file(e.path());
    }
  }
  CHECK(logs == 3);
  CHECK(merge_logs == 1);
  for (const auto& id : finished_points(dir / "local"))
    CHECK_THAT(task_logs, Catch::Contains("aggsim: point " + id + ": start"));
}
