// Output that tells the truth: a write to a full standard output is an error (exit 1, one line), not
// a success; perf's columns stay apart at any width; no file holds inf or NaN (custom_avg's
// denominator is bounded where fp32 quotients stay finite, and a run whose values leave the finite
// numbers writes nothing); errors about output folders name the folder and the variable involved.
#include <fmt/format.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "support/cli.hpp"

using namespace aggsim::test;
namespace fs = std::filesystem;

TEST_CASE("a full standard output is an error with one line, for every command that prints",
          "[output][truth]") {
  const auto dir = fresh_dir("truth-full");
  const std::string aggsim = shell_quote(AGGSIM_BIN);
  for (const std::string args : {"list", "list --keys", "list --outputs", "--version", "validate default",
                                 "perf default --max 64 -j 1"}) {
    INFO(args);
    const CliResult r = run_shell(aggsim + " " + args + " >/dev/full", dir);
    INFO(r.err);
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.err, Catch::StartsWith("aggsim: error: cannot write to standard output"));
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  }
  fs::remove_all(dir);
}

TEST_CASE("perf's columns keep a space between them at every width", "[output][truth][perf]") {
  // From 10^8 us the root and time columns fused ("-143980544.00"), from 10^12 B size and count.
  const auto dir = fresh_dir("truth-perf");
  write_file(dir / "s.yaml",
             "name: p\nranks: 8\nsteps: 1\nplatform: {topology: cluster, hosts: 8, bandwidth: "
             "1Gbps}\nnetwork: alpha_beta\nmodel: {size: 1MB, math: off}\nalgorithm: {name: "
             "ring_allreduce}\ncompute: {reduce_speed: 0}\n");
  const CliResult r =
      run_aggsim({"perf", "s.yaml", "--min", "100000000000000", "--max", "100000000000000"}, dir);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  std::istringstream lines(r.out);
  int rows = 0;
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream words(line);
    std::vector<std::string> w;
    for (std::string x; words >> x;) w.push_back(x);
    REQUIRE(w.size() >= 9);
    CHECK(w[0] == "100000000000000");
    CHECK(w[1] == "25000000000000");
    CHECK(w[4] == "-1");
    // 2 x 7 / 8 of 10^14 B at 1.25e8 B/s: about 1.4e6 s, printed in microseconds.
    CHECK(std::stod(w[5]) == Approx(1.4e12).epsilon(0.01));
    ++rows;
  }
  CHECK(rows == 1);
  fs::remove_all(dir);
}

TEST_CASE(
    "no output file holds inf or NaN: custom_avg's denominator is bounded, a diverging run writes nothing",
    "[output][truth]") {
  const auto dir = fresh_dir("truth-finite");
  // 1e-45 wrote inf and -nan into steps.csv; 1e308 was refused with the message for the lower bound.
  for (const std::string d : {"1e-45", "1e308"}) {
    const CliResult r = run_aggsim({"run", "default", "--set", "algorithm.op=custom_avg", "--set",
                                    "algorithm.denominator=" + d, "--out", "out", "-q"},
                                   dir);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Catch::Contains("algorithm.denominator: must be a value in [1e-06, 1000000000000]"));
  }
  for (const std::string d : {"1e-6", "1e12"}) {
    const CliResult r = run_aggsim({"run", "default", "--set", "algorithm.op=custom_avg", "--set",
                                    "algorithm.denominator=" + d, "--out", "out-" + d, "-q"},
                                   dir);
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    const std::string steps = read_file(dir / ("out-" + d) / "steps.csv");
    CHECK(steps.find("inf") == std::string::npos);
    CHECK(steps.find("nan") == std::string::npos);
  }
  // Least squares at a learning rate of 10^6: its loss is infinite by step 5, its gradient by step 8
  // (where top-k then looped for ever on NaN). Either way the run stops naming the cause, writing
  // nothing.
  const std::vector<std::pair<std::string, std::string>> diverging = {
      {"5", "aggsim: error: steps.csv: column loss of row 5 would hold inf: a value of the run left the "
            "finite numbers"},
      {"30", "aggsim: error: the training diverged: rank 2's gradient left the finite numbers in step 8 of "
             "30; lower workload.lr"},
  };
  for (const auto& [steps, message] : diverging) {
    const CliResult r = run_aggsim({"run", "convergence_topk", "--set", "workload.problem=least_squares",
                                    "--set", "workload.lr=1000000", "--set", "steps=" + steps, "--out", "out",
                                    "-q"},
                                   dir);
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.err, Catch::StartsWith(message));
    CHECK_FALSE(fs::exists(dir / "out"));
  }
  fs::remove_all(dir);
}

TEST_CASE("errors about output folders name the folder and the variable involved", "[output][truth]") {
  const auto dir = fresh_dir("truth-folders");
  const std::string aggsim = shell_quote(AGGSIM_BIN);
  // TMPDIR empty or missing: "output: No such file or directory", with no path.
  for (const std::string tmpdir : {"", "/nonexistent-aggsim-tmp"}) {
    const CliResult r = run_shell("TMPDIR=" + shell_quote(tmpdir) + " " + aggsim + " perf default --max 64", dir);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Catch::Contains("aggsim: error: TMPDIR='" + tmpdir + "': ") &&
                          Catch::Contains("it names the folder for temporary files"));
  }
  // A working directory removed under aggsim: relative outputs name it and $PWD; absolute ones work.
  fs::create_directories(dir / "gone");
  for (const std::string args :
       {"run default -q", "sweep expand default --grid ranks=2,4", "perf default --max 64 --csv p.csv"}) {
    INFO(args);
    const CliResult r = run_shell("cd gone && rmdir ../gone && " + aggsim + " " + args, dir);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Catch::Contains("is relative to the working directory (PWD=" + (dir / "gone").string() +
                                      "), which no longer exists"));
    fs::create_directories(dir / "gone");
  }
  const CliResult absolute =
      run_shell("cd gone && rmdir ../gone && " + aggsim + " run default -q --out " + (dir / "abs").string(), dir);
  INFO(absolute.err);
  CHECK(absolute.exit_code == 0);
  CHECK(fs::exists(dir / "abs" / "summary.json"));
  fs::remove_all(dir);
}
