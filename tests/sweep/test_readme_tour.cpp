// The five-minute tour of the top-level README.md, run as written there from a temporary folder:
// the test reads the README's block itself, so the tour and the test cannot drift apart. Only two
// things are swapped: the binary and source tree under test for `$PWD/build/aggsim`, and a fresh
// folder for the tour's /tmp folder.
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <set>

#include "support/csv.hpp"
#include "sweep_support.hpp"

using namespace aggsim::test;
namespace fs = std::filesystem;

namespace {

const char* kFirstLine = "SRC=$PWD; aggsim() { \"$SRC/build/aggsim\" \"$@\"; }";
const char* kTourFolder = "/tmp/aggsim-tour";

// The first ```sh block after the heading "## A five-minute tour".
std::string tour_block(const std::string& readme) {
  const auto heading = readme.find("\n## A five-minute tour\n");
  REQUIRE(heading != std::string::npos);
  const auto open = readme.find("```sh\n", heading);
  REQUIRE(open != std::string::npos);
  const auto begin = open + 6;
  const auto close = readme.find("\n```\n", begin);
  REQUIRE(close != std::string::npos);
  return readme.substr(begin, close - begin + 1);
}

// Replaces every occurrence of `from`, which must occur.
void replace_all(std::string& text, const std::string& from, const std::string& to) {
  REQUIRE(text.find(from) != std::string::npos);
  for (auto at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
}

}  // namespace

TEST_CASE("the five-minute tour of README.md runs as written from an empty folder", "[tour]") {
  std::string script = tour_block(read_file(fs::path(AGGSIM_SOURCE_DIR) / "README.md"));
  REQUIRE(script.rfind(kFirstLine, 0) == 0);
  const auto dir = fresh_dir("readme-tour");
  replace_all(script, kFirstLine,
              fmt::format("SRC={}; aggsim() {{ {} \"$@\"; }}", shell_quote(AGGSIM_SOURCE_DIR),
                          shell_quote(AGGSIM_BIN)));
  replace_all(script, kTourFolder, (dir / "tour").string());
  const bool have_plots = std::system("/usr/bin/python3 -c 'import matplotlib, pandas' 2>/dev/null") == 0;
  if (!have_plots) {
    WARN("the report step is left out: /usr/bin/python3 lacks matplotlib or pandas");
    replace_all(script, "/usr/bin/python3 \"$SRC/analysis/report.py\"", "true");
  }
  write_file(dir / "tour.sh", "set -e -o pipefail\n" + script);
  const auto log = dir / "log";
  // From the source tree, as the README says; every output lands in the tour folder.
  const int status =
      std::system(fmt::format("cd {} && /bin/bash {} > {} 2>&1", shell_quote(AGGSIM_SOURCE_DIR),
                              shell_quote((dir / "tour.sh").string()), shell_quote(log.string()))
                      .c_str());
  const std::string out = read_file(log);
  INFO(out);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);

  const auto tour = dir / "tour";
  const auto summary = nlohmann::json::parse(read_file(tour / "out/default/summary.json"));
  CHECK(summary["algorithm"] == "ring_allreduce");
  CHECK(summary["ranks"] == 16);

  // Three points (ring, tree, ring + PowerSGD), then the same three at three bandwidths.
  const auto compare = read_csv(tour / "out/compare/results.csv");
  REQUIRE(compare.size() == 4);
  const auto bandwidth = read_csv(tour / "out/bandwidth/results.csv");
  REQUIRE(bandwidth.size() == 10);
  for (const auto* rows : {&compare, &bandwidth})
    for (std::size_t i = 1; i < rows->size(); ++i) CHECK((*rows)[i][1] == "done");
  if (have_plots) {
    CHECK(fs::is_regular_file(tour / "out/bandwidth/report.html"));
    // Nine bars, each named by all three varying keys (the zip's two and the bandwidth), none twice.
    const auto bars = parse_csv(read_file(tour / "out/bandwidth/figures/busbw.csv"));
    const int label = column(bars, "label");
    REQUIRE(label >= 0);
    REQUIRE(bars.size() == 10);
    std::set<std::string> labels;
    for (std::size_t i = 1; i < bars.size(); ++i) labels.insert(bars[i][static_cast<std::size_t>(label)]);
    CHECK(labels.size() == 9);
    const std::string text = read_file(tour / "out/bandwidth/figures/busbw.csv");
    for (const char* part : {"bandwidth=25Gbps", "algorithm=tree_allreduce", "compression=powersgd"})
      CHECK_THAT(text, Catch::Contains(part));
    // The figures' text as a reader sees it: nothing overlaps, every label drawn.
    const auto log = dir / "figures.log";
    const int drawn =
        std::system(fmt::format("/usr/bin/python3 {}/tests/sweep/figure_text.py {} breakdown versus "
                                "busbw > {} 2>&1",
                                AGGSIM_SOURCE_DIR, shell_quote((tour / "out/bandwidth").string()),
                                shell_quote(log.string()))
                        .c_str());
    INFO(read_file(log));
    CHECK(drawn == 0);
  }

  // FSDP: hybrid gathers inside a node, full sharding over the network (more gather time exposed,
  // half the parameters a rank keeps); the same units gathered whole at once.
  const auto hybrid = nlohmann::json::parse(read_file(tour / "out/fsdp_gpt2/summary.json"));
  const auto full = nlohmann::json::parse(read_file(tour / "out/fsdp_full/summary.json"));
  CHECK(full["exposed_gather_time_s"].get<double>() > hybrid["exposed_gather_time_s"].get<double>());
  CHECK(full["param_bytes_per_rank"].get<double>() * 2 == hybrid["param_bytes_per_rank"].get<double>());
  CHECK(full["peak_gathered_bytes"] == hybrid["peak_gathered_bytes"]);
  CHECK_THAT(out, Catch::Contains("\"peak_gathered_bytes\""));

  CHECK(fs::is_regular_file(tour / "cal.yaml"));
  CHECK_THAT(out, Catch::Contains("geometric-mean error"));
  CHECK_THAT(out, Catch::Contains("busbw"));
}
