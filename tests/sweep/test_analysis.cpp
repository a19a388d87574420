// analysis/: the report renders every figure a small real sweep allows, with non-trivial PNGs.
#include <fmt/format.h>

#include <catch2/catch.hpp>

#include "sweep_support.hpp"

using namespace aggsim::test;
namespace fs = std::filesystem;

namespace {

const char* kPython = "/usr/bin/python3";  // Debian's, with python3-matplotlib and python3-pandas

// Runs a script of analysis/ with Debian's Python; returns its exit code, output in `log`.
int python(const std::string& args, std::string& log) {
  const auto tmp = fresh_dir("py");
  const std::string cmd = fmt::format("{} {}/analysis/{} > {} 2>&1", kPython, AGGSIM_SOURCE_DIR, args,
                                      shell_quote((tmp / "log").string()));
  const int status = std::system(cmd.c_str());
  log = read_file(tmp / "log");
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

bool python_ready(std::string& why) {
  std::string log;
  const int status =
      std::system(fmt::format("{} -c 'import matplotlib, pandas' 2>/dev/null", kPython).c_str());
  if (status == 0) return true;
  why = fmt::format(
      "SKIPPED: {} cannot import matplotlib and pandas (Debian packages python3-matplotlib "
      "python3-pandas, installed by .ci/setup)",
      kPython);
  return false;
}

void check_png(const fs::path& p, std::size_t min_bytes = 15000) {
  INFO(p.string());
  REQUIRE(fs::is_regular_file(p));
  const std::string bytes = read_file(p);
  CHECK(bytes.substr(0, 8) == std::string("\x89PNG\r\n\x1a\n", 8));
  CHECK(bytes.size() > min_bytes);  // a drawn figure, not an empty canvas (those are ~5 KB)
}

}  // namespace

TEST_CASE("report.py renders the breakdown and scaling figures of a real sweep into one HTML page",
          "[analysis]") {
  std::string why;
  if (!python_ready(why)) {
    WARN(why);
    return;
  }
  const auto dir = fresh_dir("analysis");
  write_file(dir / "sweep.yaml", small_sweep("  grid:\n    ranks: [2, 4, 8]\n    model.size: [1MB, 4MB]\n",
                                             "output: {trace: true}\n"));
  const fs::path out = dir / "out";
  REQUIRE(run_aggsim({"sweep", "run", "sweep.yaml", "--jobs", "2", "--out", out.string()}, dir).exit_code ==
          0);

  std::string log;
  REQUIRE(python("report.py " + shell_quote(out.string()), log) == 0);
  INFO(log);
  const std::string page = read_file(out / "report.html");
  for (const char* png : {"breakdown.png", "versus_ranks.png", "versus_model_size.png"}) {
    CHECK_THAT(page, Catch::Contains(std::string("<img src='figures/") + png + "'"));
    check_png(out / "figures" / png);
  }
  // The first point is traced: its timeline and busiest links.
  for (const char* png : {"timeline.png", "links.png"}) {
    CHECK_THAT(page, Catch::Contains(std::string("<img src='figures/") + png + "'"));
    check_png(out / "figures" / png, 10000);
  }
  // Without a training workload there is no loss: said so, not drawn.
  CHECK_THAT(log, Catch::Contains("no loss column"));
  CHECK_FALSE(fs::exists(out / "figures/loss.png"));
  for (const auto& row : read_csv(out / "results.csv")) CHECK_THAT(page, Catch::Contains(row[0]));

  {
    INFO("with a loss column, loss vs time and bytes vs final loss are drawn too");
    for (const auto& e : fs::directory_iterator(out / "runs")) {
      const auto rows = read_csv(e.path() / "steps.csv");
      std::string text = "step,step_time_s,comm_time_s,compute_time_s,end_time_s,bytes_sent,messages,loss\n";
      for (std::size_t i = 1; i < rows.size(); ++i) {
        for (const auto& c : rows[i]) text += c + ",";
        text += fmt::format("{}\n", 1.0 / static_cast<double>(i));
      }
      write_file(e.path() / "steps.csv", text);
    }
    REQUIRE(python("report.py " + shell_quote(out.string()), log) == 0);
    const std::string with_loss = read_file(out / "report.html");
    for (const char* png : {"loss.png", "bytes_loss.png"}) {
      CHECK_THAT(with_loss, Catch::Contains(std::string("<img src='figures/") + png + "'"));
      check_png(out / "figures" / png);
    }
  }
  {
    INFO("plot.py draws a single run folder's per-step breakdown");
    const fs::path run = fs::directory_iterator(out / "runs")->path();
    REQUIRE(python(fmt::format("plot.py breakdown {} -o {}", shell_quote(run.string()),
                               shell_quote((dir / "run.png").string())),
                   log) == 0);
    check_png(dir / "run.png");
  }
}
