// The first tour of analysis/README.md ("A first tour, from any folder"), run from a
// temporary folder that holds nothing: shipped scenarios, platforms and layer tables are found by
// path and by name, a sweep comes from --grid, and the report is drawn.
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "sweep_support.hpp"

using namespace aggsim::test;
namespace fs = std::filesystem;

namespace {

// Runs a shell command line in `cwd`; returns the exit status, output in `log`.
int shell(const std::string& command, const fs::path& cwd, std::string& log) {
  const auto tmp = fresh_dir("tour-log");
  const int status = std::system(fmt::format("cd {} && {} > {} 2>&1", shell_quote(cwd.string()), command,
                                             shell_quote((tmp / "log").string()))
                                     .c_str());
  log = read_file(tmp / "log");
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace

TEST_CASE("the first tour of analysis/README.md runs from an empty folder", "[analysis][tour]") {
  const auto dir = fresh_dir("tour");
  const std::string aggsim = shell_quote(AGGSIM_BIN);
  const std::string report =
      "/usr/bin/python3 " + shell_quote(std::string(AGGSIM_SOURCE_DIR) + "/analysis/report.py");
  std::string log;
  REQUIRE(shell(aggsim + " run scenarios/default.yaml", dir, log) == 0);
  INFO(log);
  for (const char* file : {"resolved.yaml", "summary.json", "steps.csv", "collectives.csv"})
    CHECK(fs::is_regular_file(dir / "out/default" / file));
  const auto summary = nlohmann::json::parse(read_file(dir / "out/default/summary.json"));
  CHECK(summary["platform"] == std::string(AGGSIM_SOURCE_DIR) + "/platforms/cluster_16.xml (16 hosts)");

  REQUIRE(shell(aggsim + " run default --set model.layers=resnet50 --set steps=2 --out out/resnet50", dir,
                log) == 0);
  CHECK_THAT(log, Catch::Contains("model.size") &&
                      Catch::Contains("dropped: the layer table given instead sets the size"));
  CHECK_THAT(
      read_file(dir / "out/resnet50/resolved.yaml"),
      Catch::Contains(std::string("layers: ") + AGGSIM_SOURCE_DIR + "/scenarios/models/resnet50.yaml"));
  CHECK(nlohmann::json::parse(read_file(dir / "out/resnet50/summary.json"))["model_bytes"] == 102228128);

  REQUIRE(
      shell(aggsim +
                " sweep run default --grid ranks=4,8,16 --grid model.size=1MB,10MB --jobs 2 --out out/sweep",
            dir, log) == 0);
  const auto results = read_csv(dir / "out/sweep/results.csv");
  REQUIRE(results.size() == 7);
  for (std::size_t i = 1; i < results.size(); ++i) CHECK(results[i][1] == "done");

  std::string why;
  if (std::system("/usr/bin/python3 -c 'import matplotlib, pandas' 2>/dev/null") != 0) {
    WARN("SKIPPED: the report part needs /usr/bin/python3 with matplotlib and pandas");
    return;
  }
  REQUIRE(shell(report + " out/sweep", dir, log) == 0);
  const std::string page = read_file(dir / "out/sweep/report.html");
  for (const char* png : {"breakdown.png", "versus_ranks.png", "versus_model_size.png", "busbw.png"})
    CHECK_THAT(page, Catch::Contains(std::string("<img src='figures/") + png + "'"));
  REQUIRE(shell(report + " out/resnet50", dir, log) == 0);
  CHECK_THAT(read_file(dir / "out/resnet50/report.html"),
             Catch::Contains("<th>gradient</th><td>synthetic</td>"));
}
