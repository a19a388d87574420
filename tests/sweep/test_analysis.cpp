// analysis/: the report renders every figure a small real sweep allows, with non-trivial PNGs.
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

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
      auto rows = read_csv(e.path() / "steps.csv");
      const int loss = column(rows, "loss");
      REQUIRE(loss >= 0);
      std::string text;
      for (std::size_t i = 0; i < rows.size(); ++i) {
        rows[i].resize(rows[0].size());  // trailing empty cells
        if (i > 0) rows[i][static_cast<std::size_t>(loss)] = fmt::format("{}", 1.0 / static_cast<double>(i));
        for (std::size_t c = 0; c < rows[i].size(); ++c) text += (c ? "," : "") + rows[i][c];
        text += "\n";
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

namespace {

// Rows of a CSV whose cells may be quoted (RFC 4180, as pandas writes them).
std::vector<std::vector<std::string>> read_quoted_csv(const fs::path& csv) {
  std::vector<std::vector<std::string>> rows(1);
  std::string cell;
  bool quoted = false;
  const std::string text = read_file(csv);
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"')
        cell += '"', ++i;
      else if (c == '"')
        quoted = false;
      else
        cell += c;
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      rows.back().push_back(cell), cell.clear();
    } else if (c == '\n') {
      rows.back().push_back(cell), cell.clear();
      rows.emplace_back();
    } else if (c != '\r') {
      cell += c;
    }
  }
  if (rows.back().empty()) rows.pop_back();
  return rows;
}

// figures/<name>.csv as one map per row.
std::vector<std::map<std::string, std::string>> figure_data(const fs::path& csv) {
  const auto rows = read_quoted_csv(csv);
  std::vector<std::map<std::string, std::string>> out;
  for (std::size_t i = 1; i < rows.size(); ++i) {
    std::map<std::string, std::string> row;
    for (std::size_t c = 0; c < rows[0].size() && c < rows[i].size(); ++c) row[rows[0][c]] = rows[i][c];
    out.push_back(row);
  }
  return out;
}

}  // namespace

TEST_CASE("bandwidths in GBps and Gbps reach the plots as numbers, in their natural order", "[analysis]") {
  std::string why;
  if (!python_ready(why)) {
    WARN(why);
    return;
  }
  const auto dir = fresh_dir("units");
  // Bytes and bits mixed, written out of order: 1 GB/s = 8 Gb/s, 25 GB/s = 200 Gb/s.
  write_file(dir / "sweep.yaml",
             small_sweep("  grid:\n    platform.bandwidth: [1GBps, 10GBps, 25Gbps, 100Gbps, 25GBps]\n"
                         "    ranks: [16, 4, 8]\n"));
  const fs::path out = dir / "out";
  REQUIRE(run_aggsim({"sweep", "run", "sweep.yaml", "--jobs", "2", "--out", out.string()}, dir).exit_code ==
          0);

  const auto results = read_csv(out / "results.csv");
  const int written = column(results, "platform.bandwidth"), si = column(results, "platform.bandwidth_Bps");
  REQUIRE(si == written + 1);  // the SI column sits beside the value as written
  const std::map<std::string, double> bytes_per_s = {
      {"1GBps", 1e9}, {"10GBps", 1e10}, {"25Gbps", 25e9 / 8}, {"100Gbps", 100e9 / 8}, {"25GBps", 25e9}};
  for (std::size_t i = 1; i < results.size(); ++i)
    CHECK(std::stod(results[i][si]) == bytes_per_s.at(results[i][written]));
  CHECK(column(results, "ranks_bytes") == -1);  // plain numbers need no second column

  std::string log;
  REQUIRE(python("report.py " + shell_quote(out.string()), log) == 0);
  INFO(log);
  const auto plotted = figure_data(out / "figures/versus_platform_bandwidth.csv");
  REQUIRE(plotted.size() == 15);
  std::vector<double> xs;
  for (const auto& row : plotted) {
    if (row.at("line") == "ranks=4") xs.push_back(std::stod(row.at("x")));
    // alpha-beta ring: 2(p-1)(a + S/(p b)) per step, whatever unit the bandwidth was written in;
    // a = 2 us (two 1 us links per route).
    const double p = std::stod(row.at("line").substr(6)), b = std::stod(row.at("x")) / 8e-9;
    CHECK(std::stod(row.at("mean_ms")) == Approx(2 * (p - 1) * (2e-6 + 1e6 / (p * b)) * 1e3).epsilon(1e-6));
  }
  CHECK(xs == std::vector<double>{8, 25, 80, 100, 200});  // Gb/s, increasing: no sawtooth
  // Lines in natural order of ranks (4, 8, 16), not as text (16, 4, 8).
  CHECK(plotted.front().at("line") == "ranks=4");
  CHECK(plotted.back().at("line") == "ranks=16");
  // The breakdown's bars: bandwidths by value (bits and bytes alike), then ranks by value.
  std::vector<std::string> labels, expected;
  for (const auto& bar : figure_data(out / "figures/breakdown.csv")) labels.push_back(bar.at("label"));
  for (const char* bw : {"1GBps", "25Gbps", "10GBps", "100Gbps", "25GBps"})
    for (const char* p : {"4", "8", "16"}) expected.push_back(fmt::format("bandwidth={}, ranks={}", bw, p));
  CHECK(labels == expected);
}

TEST_CASE("the breakdown never draws a bar taller than the step", "[analysis]") {
  std::string why;
  if (!python_ready(why)) {
    WARN(why);
    return;
  }
  // DDP buckets overlapping the backward pass: compute + aggregation exceed the step.
  const auto dir = fresh_dir("breakdown");
  const std::string scenario = fmt::format(R"(name: overlap
ranks: 4
steps: 3
platform: {{topology: cluster, hosts: 4, bandwidth: 10Gbps, latency: 1us, speed: 10Tf}}
network: alpha_beta
model: {{layers: {}/scenarios/models/resnet50.yaml, batch: 32, math: off}}
algorithm: {{name: ring_allreduce, granularity: layer, bucket: 25MB}}
)",
                                           AGGSIM_SOURCE_DIR);
  write_file(dir / "s.yaml", scenario);
  REQUIRE(run_aggsim({"run", "s.yaml", "--out", "run", "-q"}, dir).exit_code == 0);
  std::string log;
  REQUIRE(python(fmt::format("plot.py breakdown {} -o {}", shell_quote((dir / "run").string()),
                             shell_quote((dir / "b.png").string())),
                 log) == 0);
  check_png(dir / "b.png");
  const auto steps = read_csv(dir / "run/steps.csv");
  const auto bars = figure_data(dir / "b.csv");
  REQUIRE(bars.size() == 3);
  bool overlapped = false;
  for (std::size_t s = 0; s < bars.size(); ++s) {
    const auto& bar = bars[s];
    const double step = std::stod(steps[s + 1][column(steps, "step_time_s")]);
    const double compute = std::stod(steps[s + 1][column(steps, "compute_time_s")]);
    const double comm = std::stod(steps[s + 1][column(steps, "comm_time_s")]);
    CHECK(compute + comm > step);  // stacking both, as before, would overshoot the step
    const double height =
        std::stod(bar.at("compute_s")) + std::stod(bar.at("exposed_comm_s")) + std::stod(bar.at("other_s"));
    CHECK(height == Approx(step).epsilon(1e-9));
    // The hatch is steps.csv's hidden share, read, not computed again; with the exposed part it is
    // the critical rank's time in calls, and it fits in the compute bar.
    const double hidden = std::stod(steps[s + 1][column(steps, "hidden_comm_time_s")]);
    const double exposed = std::stod(steps[s + 1][column(steps, "exposed_comm_time_s")]);
    CHECK(std::stod(bar.at("overlap_s")) == Approx(hidden).epsilon(1e-12));
    CHECK(std::stod(bar.at("calls_s")) == Approx(hidden + exposed).epsilon(1e-12));
    CHECK(std::stod(bar.at("overlap_s")) <= std::stod(bar.at("compute_s")));
    CHECK(bar.at("label") == fmt::format("step {}", s));
    overlapped = overlapped || std::stod(bar.at("overlap_s")) > 0;
  }
  CHECK(overlapped);
}

TEST_CASE("repetitions: every run kept, the report shows their mean and 95 % interval", "[analysis]") {
  std::string why;
  if (!python_ready(why)) {
    WARN(why);
    return;
  }
  // Lognormal stragglers make the step time depend on the seed.
  const auto dir = fresh_dir("repeat");
  write_file(dir / "sweep.yaml", fmt::format(R"(name: repeat
seed: 5
ranks: 4
steps: 2
platform: {{topology: cluster, hosts: 4, bandwidth: 10Gbps, latency: 1us, speed: 1Gf}}
network: alpha_beta
model: {{layers: {}/scenarios/models/lenet.yaml, batch: 32, math: off}}
algorithm: {{name: ring_allreduce}}
compute: {{straggler: {{distribution: lognormal, sigma: 0.5}}}}
sweep:
  grid:
    ranks: [2, 4]
  repeat: 3
)",
                                             AGGSIM_SOURCE_DIR));
  const fs::path out = dir / "out";
  REQUIRE(run_aggsim({"sweep", "run", "sweep.yaml", "--jobs", "2", "--out", out.string()}, dir).exit_code ==
          0);
  const auto results = read_csv(out / "results.csv");
  REQUIRE(results.size() == 7);
  const int rep = column(results, "repeat"), seed = column(results, "seed"),
            mean = column(results, "mean_step_time_s");
  REQUIRE(rep >= 0);
  std::set<std::string> seeds;
  std::map<std::string, std::vector<double>> times;  // ranks -> the three runs' mean step times
  for (std::size_t i = 1; i < results.size(); ++i) {
    seeds.insert(results[i][seed]);
    times[results[i][column(results, "ranks")]].push_back(std::stod(results[i][mean]));
  }
  CHECK(seeds.size() == 3);  // the same three seeds for both rank counts
  std::string log;
  REQUIRE(python("report.py " + shell_quote(out.string()), log) == 0);
  INFO(log);
  const auto plotted = figure_data(out / "figures/versus_ranks.csv");
  REQUIRE(plotted.size() == 2);
  for (const auto& row : plotted) {
    const auto& t = times.at(row.at("x") == "2.0" || row.at("x") == "2" ? "2" : "4");
    const double m = (t[0] + t[1] + t[2]) / 3;
    double ss = 0;
    for (double v : t) ss += (v - m) * (v - m);
    // Student's t for 2 degrees of freedom: 4.302652729911275.
    const double half = 4.302652729911275 * std::sqrt(ss / 2) / std::sqrt(3.0);
    CHECK(row.at("runs") == "3");
    CHECK(std::stod(row.at("mean_ms")) == Approx(m * 1e3).epsilon(1e-9));
    CHECK(std::stod(row.at("ci95_ms")) == Approx(half * 1e3).epsilon(1e-6));
    CHECK(half > 0);
  }
}

namespace {

// Renders `html` in headless Chromium into `png` (the flags keep it off the network and out of the
// user's profile); returns the share of the page's pixels that are not white.
double render_in_chromium(const fs::path& html, const fs::path& png, const fs::path& work) {
  const std::string cmd = fmt::format(
      "/usr/bin/chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run "
      "--disable-background-networking "
      "--disable-component-update --disable-sync --user-data-dir={} --window-size=1200,3000 "
      "--screenshot={} file://{} > {} 2>&1",
      shell_quote((work / "profile").string()), shell_quote(png.string()), shell_quote(html.string()),
      shell_quote((work / "chromium.log").string()));
  INFO(read_file(work / "chromium.log"));
  REQUIRE(std::system(cmd.c_str()) == 0);
  check_png(png, 50000);
  const std::string measure = fmt::format(
      "-c \"import matplotlib.image as m; a = m.imread('{}')[..., :3]; print((a.min(axis=2) < 0.9).mean())\"",
      png.string());
  REQUIRE(std::system(fmt::format("{} {} > {} 2>&1", kPython, measure, shell_quote((work / "ink").string()))
                          .c_str()) == 0);
  return std::stod(read_file(work / "ink"));
}

}  // namespace

TEST_CASE("the report renders in headless Chromium with its figures drawn", "[analysis][chromium]") {
  std::string why;
  if (!python_ready(why)) {
    WARN(why);
    return;
  }
  if (!fs::exists("/usr/bin/chromium")) {
    WARN("SKIPPED: /usr/bin/chromium is missing (Debian package chromium, installed by .ci/setup)");
    return;
  }
  const auto dir = fresh_dir("chromium");
  write_file(dir / "sweep.yaml", small_sweep("  grid:\n    ranks: [2, 4, 8]\n    model.size: [1MB, 4MB]\n"));
  const fs::path out = dir / "out";
  REQUIRE(run_aggsim({"sweep", "run", "sweep.yaml", "--jobs", "2", "--out", out.string()}, dir).exit_code ==
          0);
  std::string log;
  REQUIRE(python("report.py " + shell_quote(out.string()), log) == 0);
  // Drawn, not blank: a good share of the page's pixels are not white (figures and table).
  CHECK(render_in_chromium(out / "report.html", dir / "report.png", dir) > 0.05);
  // A run's page: its summary as a table, and a 40-rank timeline by phase.
  write_file(dir / "run.yaml", R"(name: traced
ranks: 40
steps: 2
platform: {topology: cluster, hosts: 40, bandwidth: 10Gbps, latency: 1us}
model: {size: 4MB, math: off}
algorithm: {name: ring_allreduce}
output: {trace: true}
)");
  REQUIRE(run_aggsim({"run", "run.yaml", "--out", "run", "-q"}, dir).exit_code == 0);
  REQUIRE(python("report.py " + shell_quote((dir / "run").string()), log) == 0);
  CHECK_THAT(read_file(dir / "run/report.html"), Catch::Contains("<img src='figures/timeline.png'"));
  CHECK(render_in_chromium(dir / "run/report.html", dir / "run.png", dir) > 0.05);
}

namespace {

// A run's summary.json.
nlohmann::json summary_of(const fs::path& run) {
  return nlohmann::json::parse(read_file(run / "summary.json"));
}

// A CSV written by aggsim (no quoted cells in the columns read here) as one map per row.
std::vector<std::map<std::string, std::string>> rows_of(const fs::path& csv) {
  return figure_data(csv);
}

double mean_of(const std::vector<std::map<std::string, std::string>>& rows, const std::string& column) {
  double total = 0;
  int n = 0;
  for (const auto& r : rows)
    if (!r.at(column).empty()) total += std::stod(r.at(column)), ++n;
  return n ? total / n : std::nan("");
}

}  // namespace

TEST_CASE("every figure has its CSV, and its numbers are summary.json's, steps.csv's and collectives.csv's",
          "[analysis]") {
  std::string why;
  if (!python_ready(why)) {
    WARN(why);
    return;
  }
  const auto dir = fresh_dir("numbers");
  write_file(dir / "sweep.yaml", small_sweep("  grid:\n    ranks: [2, 4]\n    model.size: [1MB, 4MB]\n",
                                             "output: {trace: true}\n"));
  const fs::path out = dir / "out";
  REQUIRE(run_aggsim({"sweep", "run", "sweep.yaml", "--jobs", "2", "--out", out.string()}, dir).exit_code ==
          0);
  std::string log;
  REQUIRE(python("report.py " + shell_quote(out.string()), log) == 0);
  INFO(log);
  for (const auto& e : fs::directory_iterator(out / "figures"))
    if (e.path().extension() == ".png") {
      INFO(e.path());
      CHECK(fs::is_regular_file(fs::path(e.path()).replace_extension(".csv")));
    }
  // The runs, by their swept values ("ranks=2, size=1MB", the figures' labels).
  std::map<std::string, fs::path> runs;
  for (const auto& row : figure_data(out / "results.csv"))
    runs[fmt::format("ranks={}, size={}", row.at("ranks"), row.at("model.size"))] =
        out / "runs" / row.at("id");
  REQUIRE(runs.size() == 4);

  for (const auto& bar : rows_of(out / "figures/breakdown.csv")) {
    INFO("breakdown " << bar.at("label"));
    const fs::path run = runs.at(bar.at("label"));
    CHECK(std::stod(bar.at("step_s")) ==
          Approx(mean_of(rows_of(run / "steps.csv"), "step_time_s")).epsilon(1e-12));
    CHECK(std::stod(bar.at("step_s")) ==
          Approx(summary_of(run)["mean_step_time_s"].get<double>()).epsilon(1e-12));
  }
  for (const auto& point : rows_of(out / "figures/versus_ranks.csv")) {
    const std::string label = fmt::format("ranks={}, {}", std::stoi(point.at("x")), point.at("line"));
    INFO("versus " << label);
    CHECK(std::stod(point.at("mean_ms")) ==
          Approx(summary_of(runs.at(label))["mean_step_time_s"].get<double>() * 1e3).epsilon(1e-12));
  }
  // busbw vs size: a line per rank count, a point per call size, the calls' mean.
  const auto busbw = rows_of(out / "figures/busbw.csv");
  REQUIRE(busbw.size() == 4);
  for (const auto& point : busbw) {
    const std::string size = point.at("dense_bytes") == "1000000" ? "1MB" : "4MB";
    const fs::path run = runs.at(fmt::format("{}, size={}", point.at("line"), size));
    INFO("busbw " << run);
    const auto calls = rows_of(run / "collectives.csv");
    CHECK(std::stod(point.at("busbw_GBps")) == Approx(mean_of(calls, "busbw_GBps")).epsilon(1e-12));
    CHECK(std::stod(point.at("busbw_GBps")) ==
          Approx(summary_of(run)["busbw_GBps"].get<double>()).epsilon(1e-9));
    CHECK(point.at("calls") == std::to_string(calls.size()));
  }
  // The first traced point's timeline: busy time per rank and kind is the trace's, and the sends
  // are the run's messages; its busiest links are links.csv's.
  const fs::path traced = runs.at("ranks=2, size=1MB");
  const auto trace = nlohmann::json::parse(read_file(traced / "trace.json"))["traceEvents"];
  std::map<std::pair<int, std::string>, double> busy;
  for (const auto& e : trace)
    if (e["ph"] == "X" && e["pid"].get<int>() < 2)
      busy[{e["pid"].get<int>(), e["name"].get<std::string>()}] += e["dur"].get<double>() * 1e-6;
  double sends = 0;
  for (const auto& row : rows_of(out / "figures/timeline.csv")) {
    INFO("timeline rank " << row.at("rank") << " " << row.at("kind"));
    CHECK(std::stod(row.at("busy_s")) ==
          Approx(busy.at({std::stoi(row.at("rank")), row.at("kind")})).epsilon(1e-9));
    if (row.at("kind") == "send") sends += std::stod(row.at("spans"));
  }
  CHECK(sends == summary_of(traced)["messages"].get<double>());
  std::map<std::string, std::map<std::string, std::string>> links;
  for (const auto& l : rows_of(traced / "links.csv")) links[l.at("link")] = l;
  const auto shown = rows_of(out / "figures/links.csv");
  REQUIRE(!shown.empty());
  for (const auto& row : shown) {
    const auto& l = links.at(row.at("link"));
    CHECK(row.at("utilisation") == l.at("utilisation"));
    CHECK(row.at("bytes") == l.at("bytes"));
    CHECK(row.at("label") == fmt::format("{} -> {} ({})", l.at("end_a"), l.at("end_b"), l.at("tier")));
  }
  // The results table: swept values as written and the figures people look for first; no SI copies.
  const std::string page = read_file(out / "report.html");
  CHECK_THAT(page, Catch::Contains("<th>busbw_GBps</th>"));
  CHECK_THAT(page, !Catch::Contains("model.size_bytes"));
  CHECK(page.find("<th>mean_step_time_s</th>") < page.find("<th>bytes_sent</th>"));
}

TEST_CASE("the phases figure counts ranks per phase, and the counts add up to the trace", "[analysis]") {
  std::string why;
  if (!python_ready(why)) {
    WARN(why);
    return;
  }
  const auto dir = fresh_dir("phases");
  write_file(dir / "s.yaml", R"(name: phases
ranks: 40
steps: 2
platform: {topology: cluster, hosts: 40, bandwidth: 10Gbps, latency: 1us}
network: alpha_beta
model: {size: 4MB, math: off}
algorithm: {name: ring_allreduce}
output: {trace: true}
)");
  REQUIRE(run_aggsim({"run", "s.yaml", "--out", "run", "-q"}, dir).exit_code == 0);
  std::string log;
  REQUIRE(python(fmt::format("plot.py phases {} -o {}", shell_quote((dir / "run").string()),
                             shell_quote((dir / "t.png").string())),
                 log) == 0);
  INFO(log);
  check_png(dir / "t.png");
  // The integral of each lane is the time the ranks spent in that phase (transfers: summed).
  std::map<std::string, double> integral;
  for (const auto& row : rows_of(dir / "t.csv"))
    integral[row.at("kind")] +=
        std::stod(row.at("mean_count")) * (std::stod(row.at("bin_end_s")) - std::stod(row.at("bin_start_s")));
  std::map<std::string, double> busy;
  const auto trace = nlohmann::json::parse(read_file(dir / "run/trace.json"));
  for (const auto& e : trace["traceEvents"])
    if (e["ph"] == "X" && e["pid"].get<int>() < 40)
      busy[e["name"].get<std::string>()] += e["dur"].get<double>() * 1e-6;
  for (const char* kind : {"send", "recv", "aggregate", "reduce"}) {
    INFO(kind);
    REQUIRE(busy.count(kind));
    CHECK(integral.at(kind) == Approx(busy.at(kind)).epsilon(1e-9));
  }
}

TEST_CASE(
    "plot.py refuses an axis that was not swept, naming the swept keys, and draws every figure it lists",
    "[analysis]") {
  std::string why;
  if (!python_ready(why)) {
    WARN(why);
    return;
  }
  const auto dir = fresh_dir("axis");
  write_file(dir / "sweep.yaml",
             small_sweep("  grid:\n    ranks: [2, 4]\n    algorithm.name: [ring_allreduce, "
                         "tree_allreduce]\n"));
  const fs::path out = dir / "out";
  REQUIRE(run_aggsim({"sweep", "run", "sweep.yaml", "--jobs", "2", "--out", out.string()}, dir).exit_code ==
          0);
  std::string log;
  const auto png = shell_quote((dir / "v.png").string());
  CHECK(python(fmt::format("plot.py versus {} --x platform.bandwidth -o {}", shell_quote(out.string()), png),
               log) == 2);
  CHECK_THAT(log, Catch::Contains("--x platform.bandwidth: not a swept key") &&
                      Catch::Contains("swept: ranks, algorithm.name") && Catch::Contains("for --x: ranks"));
  CHECK(python(fmt::format("plot.py versus {} --x algorithm.name -o {}", shell_quote(out.string()), png),
               log) == 2);
  CHECK_THAT(log, Catch::Contains("not numbers"));
  CHECK_FALSE(fs::exists(dir / "v.png"));
  REQUIRE(python(fmt::format("plot.py versus {} --x ranks -o {}", shell_quote(out.string()), png), log) == 0);
  check_png(dir / "v.png");
  // Every figure of the table is one plot.py draws (time-to-target was listed but refused before).
  REQUIRE(python(fmt::format("plot.py time-to-target {} -o {}", shell_quote(out.string()), png), log) == 0);
  CHECK_THAT(log, Catch::Contains("no target_loss"));
  // The figure table of analysis/README.md is plot.py's own list.
  REQUIRE(python("plot.py --list --markdown", log) == 0);
  const std::string readme = read_file(fs::path(AGGSIM_SOURCE_DIR) / "analysis/README.md");
  const std::string begin = "-->\n", marker = "<!-- figures: generated by";
  const auto at = readme.find(marker);
  REQUIRE(at != std::string::npos);
  const auto from = readme.find(begin, at) + begin.size();
  const auto to = readme.find("<!-- end of figures -->", from);
  INFO("regenerate the block with: /usr/bin/python3 analysis/plot.py --list --markdown");
  CHECK(readme.substr(from, to - from) == log);
  for (const char* figure :
       {"breakdown", "versus", "busbw", "loss", "bytes-loss", "time-to-target", "timeline", "links"})
    CHECK_THAT(log, Catch::Contains(std::string("| `") + figure + "` |"));
}

TEST_CASE("math figures on a synthetic gradient come with what to expect, and the expectations hold",
          "[analysis]") {
  std::string why;
  if (!python_ready(why)) {
    WARN(why);
    return;
  }
  // Closed forms for standard normal values (sim/output/README.md): top-k keeps a share of the
  // energy given by the normal tail, random-k's unbiased scaling gives sqrt(1/rho - 1), sign's mean
  // magnitude sqrt(1 - 2/pi).
  const auto dir = fresh_dir("synthetic");
  for (const char* compression :
       {"{name: topk, ratio: 0.05}", "{name: randomk, ratio: 0.1}", "{name: sign}"}) {
    INFO(compression);
    write_file(dir / "s.yaml", std::string(R"(name: synthetic
ranks: 4
steps: 3
platform: {topology: cluster, hosts: 4}
model: {size: 8MB, proxy_dim: 4096}
algorithm: {name: allgather}
compression: )") + compression + "\n");
    REQUIRE(run_aggsim({"run", "s.yaml", "--out", "run", "-q", "--force"}, dir).exit_code == 0);
    const auto summary = summary_of(dir / "run");
    CHECK(summary["gradient"] == "synthetic");
    std::string log;
    REQUIRE(python("report.py " + shell_quote((dir / "run").string()), log) == 0);
    const std::string page = read_file(dir / "run/report.html");
    CHECK_THAT(page, Catch::Contains("Math figures on a synthetic gradient"));
    const std::string tag = "Expected compress_error: <b>";
    const auto at = page.find(tag);
    REQUIRE(at != std::string::npos);
    const double expected = std::stod(page.substr(at + tag.size()));
    CHECK(summary["compress_error"].get<double>() == Approx(expected).epsilon(0.02));
  }
  // A workload's gradients are not synthetic: no note.
  write_file(dir / "w.yaml", R"(name: trained
ranks: 4
steps: 3
platform: {topology: cluster, hosts: 4}
model: {size: 8MB}
algorithm: {name: allgather}
compression: {name: topk, ratio: 0.05}
workload: {problem: softmax, dim: 8, classes: 3}
)");
  REQUIRE(run_aggsim({"run", "w.yaml", "--out", "trained", "-q"}, dir).exit_code == 0);
  CHECK(summary_of(dir / "trained")["gradient"] == "workload");
  std::string log;
  REQUIRE(python("report.py " + shell_quote((dir / "trained").string()), log) == 0);
  const std::string page = read_file(dir / "trained/report.html");
  CHECK_THAT(page, !Catch::Contains("synthetic gradient"));
  // The run's header is summary.json in JSON spellings and units, not Python's.
  CHECK_THAT(page, Catch::Contains("<th>calibration</th><td>null</td>"));
  CHECK_THAT(page, Catch::Contains("<th>math</th><td>true</td>"));
  CHECK_THAT(page, Catch::Contains("<th>model_bytes</th><td>8 MB</td>"));
  for (const char* python_spelling : {">None<", ">True<", ">False<", ">nan<"})
    CHECK_THAT(page, !Catch::Contains(python_spelling));
}

TEST_CASE("one number: the breakdown's hidden aggregation is steps.csv's and summary.json's", "[analysis]") {
  std::string why;
  if (!python_ready(why)) {
    WARN(why);
    return;
  }
  // DDP buckets of ResNet-50 on one 8-GPU node: a flat ring and NCCL, whose calls hide behind the
  // backward pass in different amounts.
  const auto dir = fresh_dir("hidden-one-number");
  write_file(dir / "sweep.yaml", R"(name: ddp
ranks: 8
steps: 2
platform: {topology: cluster, nodes: 1, gpus_per_node: 8, intra_bandwidth: 300GBps, bandwidth: 100Gbps, latency: 1us, speed: 100Tf}
model: {layers: resnet50, math: off}
algorithm: {name: ring_allreduce, granularity: layer, bucket: 25MB}
sweep:
  grid:
    algorithm.name: [ring_allreduce, nccl_allreduce]
)");
  const fs::path out = dir / "out";
  REQUIRE(run_aggsim({"sweep", "run", "sweep.yaml", "--jobs", "2", "--out", out.string()}, dir).exit_code ==
          0);
  std::string log;
  REQUIRE(python(fmt::format("plot.py breakdown {} -o {}", shell_quote(out.string()),
                             shell_quote((dir / "b.png").string())),
                 log) == 0);
  std::map<std::string, fs::path> runs;
  for (const auto& row : figure_data(out / "results.csv"))
    runs["algorithm=" + row.at("algorithm.name")] = out / "runs" / row.at("id");
  const auto bars = figure_data(dir / "b.csv");
  REQUIRE(bars.size() == 2);
  for (const auto& bar : bars) {
    INFO(bar.at("label"));
    const fs::path run = runs.at(bar.at("label"));
    const double summary = summary_of(run)["hidden_comm_time_s"].get<double>();
    CHECK(summary > 0);
    CHECK(std::stod(bar.at("overlap_s")) == Approx(summary).epsilon(1e-12));
    CHECK(std::stod(bar.at("overlap_s")) ==
          Approx(mean_of(rows_of(run / "steps.csv"), "hidden_comm_time_s")).epsilon(1e-12));
    CHECK(std::stod(bar.at("calls_s")) ==
          Approx(summary + summary_of(run)["exposed_comm_time_s"].get<double>()).epsilon(1e-12));
  }
}

TEST_CASE("past 32 ranks the timeline has a lane per node and names the slow NIC's host and link first",
          "[analysis]") {
  std::string why;
  if (!python_ready(why)) {
    WARN(why);
    return;
  }
  // One slow NIC (1 Gb/s among 10 Gb/s): at 64 hosts a lane each; at 1,024 hosts a lane per 4 nodes.
  // The ring sends through the slow NIC in both directions; halving-doubling keeps 1,024 ranks cheap.
  struct Case {
    int ranks;
    const char* algorithm;
    const char* slow;
    const char* lane;
  };
  for (const Case& c : {Case{64, "ring_allreduce", "host-37", "host-37"},
                        Case{1024, "halving_doubling_allreduce", "host-601", "host-600 ... host-603"}}) {
    INFO(c.ranks << " ranks");
    const auto dir = fresh_dir("slow-nic");
    write_file(dir / "s.yaml", fmt::format(R"(name: slow
ranks: {0}
steps: 2
platform:
  topology: cluster
  hosts: {0}
  bandwidth: 10Gbps
  latency: 1us
  overrides:
    - {{hosts: {2}, bandwidth: 1Gbps}}
network: alpha_beta
model: {{size: 4MB, math: off}}
algorithm: {{name: {1}}}
output: {{trace: true}}
)",
                                           c.ranks, c.algorithm, c.slow));
    REQUIRE(run_aggsim({"run", "s.yaml", "--out", "run", "-q"}, dir).exit_code == 0);
    std::string log;
    REQUIRE(python("report.py " + shell_quote((dir / "run").string()), log) == 0);
    INFO(log);
    const auto lanes = figure_data(dir / "run/figures/timeline.csv");
    std::set<std::string> labels;
    for (const auto& row : lanes) labels.insert(row.at("label"));
    CHECK(labels.size() == (c.ranks == 64 ? 64u : 256u));
    CHECK(lanes.front().at("label") == c.lane);
    CHECK(lanes.front().at("busiest_host") == c.slow);
    // Its sends and receives both held up: two thirds of its processor, sends and receives in use.
    CHECK(std::stod(lanes.front().at("busiest_host_share")) == Approx(2.0 / 3).epsilon(0.01));
    const auto links = figure_data(dir / "run/figures/links.csv");
    REQUIRE(links.size() >= 2);
    for (std::size_t i = 0; i < 2; ++i)
      CHECK_THAT(links[i].at("link"), Catch::StartsWith(std::string(c.slow) + "_link"));
    const std::string page = read_file(dir / "run/report.html");
    CHECK_THAT(page, Catch::Contains("<img src='figures/timeline.png'") &&
                         Catch::Contains("<img src='figures/phases.png'"));
    // The drawn text: nothing overlaps, the slow host's lane is named.
    REQUIRE(std::system(fmt::format("{} {}/tests/sweep/figure_text.py {} timeline > {} 2>&1", kPython,
                                    AGGSIM_SOURCE_DIR, shell_quote((dir / "run").string()),
                                    shell_quote((dir / "ft.log").string()))
                            .c_str()) == 0);
  }
}

TEST_CASE("a sweep page says per compressor what its math figures mean on a synthetic gradient",
          "[analysis]") {
  std::string why;
  if (!python_ready(why)) {
    WARN(why);
    return;
  }
  const auto dir = fresh_dir("synthetic-sweep");
  write_file(dir / "sweep.yaml", R"(name: synthetic
ranks: 4
steps: 3
platform: {topology: cluster, hosts: 4}
model: {size: 8MB, proxy_dim: 4096}
algorithm: {name: allgather}
compression: {name: topk, ratio: 0.05}
sweep:
  zip:
    compression: [{name: topk, ratio: 0.05}, {name: randomk, ratio: 0.1}, {name: sign}, {name: none}]
)");
  const fs::path out = dir / "out";
  REQUIRE(run_aggsim({"sweep", "run", "sweep.yaml", "--jobs", "2", "--out", out.string()}, dir).exit_code ==
          0);
  std::string log;
  REQUIRE(python("report.py " + shell_quote(out.string()), log) == 0);
  const std::string page = read_file(out / "report.html");
  CHECK_THAT(page, Catch::Contains("Math figures on a synthetic gradient") &&
                       Catch::Contains("3 of the 4 points have no training workload"));
  // Each compressor's item: its expected compress_error, which its point's measurement meets.
  std::map<std::string, double> measured;
  for (const auto& row : figure_data(out / "results.csv"))
    measured[row.at("compression")] = std::stod(row.at("compress_error"));
  for (const auto& [compressor, item] : std::vector<std::pair<std::string, std::string>>{
           {"{name: topk, ratio: 0.05}", "For topk (ratio: 0.05)"},
           {"{name: randomk, ratio: 0.1}", "For randomk (ratio: 0.1)"},
           {"{name: sign}", "For sign"}}) {
    INFO(compressor);
    const auto at = page.find(item + " (1 point)");
    REQUIRE(at != std::string::npos);
    const std::string tag = "Expected compress_error: <b>";
    const auto value = page.find(tag, at);
    REQUIRE(value != std::string::npos);
    CHECK(page.find("For ", at + 4) > value);  // the value belongs to this item
    CHECK(measured.at(compressor) == Approx(std::stod(page.substr(value + tag.size()))).epsilon(0.02));
  }
  CHECK_THAT(page, !Catch::Contains("For none"));
}

TEST_CASE("one number: the breakdown's exposed gathers are steps.csv's and summary.json's", "[analysis]") {
  std::string why;
  if (!python_ready(why)) {
    WARN(why);
    return;
  }
  // FSDP's full sharding of ResNet-50 on one 8-GPU node: gathers before the units' compute, some
  // exposed; the breakdown draws them apart from the compute.
  const auto dir = fresh_dir("gathers-one-number");
  write_file(dir / "fsdp.yaml", R"(name: fsdp
ranks: 8
steps: 2
platform: {topology: cluster, nodes: 1, gpus_per_node: 8, intra_bandwidth: 300GBps, bandwidth: 100Gbps, latency: 1us, speed: 100Tf}
model: {layers: resnet50, math: off}
algorithm: {name: fsdp, unit: 10MB}
)");
  const fs::path run = dir / "run";
  REQUIRE(run_aggsim({"run", "fsdp.yaml", "--out", run.string(), "-q"}, dir).exit_code == 0);
  std::string log;
  REQUIRE(python(fmt::format("plot.py breakdown {} -o {}", shell_quote(run.string()),
                             shell_quote((dir / "b.png").string())),
                 log) == 0);
  const auto steps = rows_of(run / "steps.csv");
  const auto bars = figure_data(dir / "b.csv");
  REQUIRE(bars.size() == steps.size());
  double total = 0;
  for (std::size_t i = 0; i < bars.size(); ++i) {
    INFO(bars[i].at("label"));
    const double gathers = std::stod(steps[i].at("exposed_gather_time_s"));
    CHECK(gathers > 0);
    CHECK(std::stod(bars[i].at("gather_s")) == Approx(gathers).epsilon(1e-12));
    CHECK(std::stod(bars[i].at("calls_s")) ==
          Approx(gathers + std::stod(steps[i].at("exposed_comm_time_s")) + std::stod(steps[i].at("hidden_comm_time_s")))
              .epsilon(1e-12));
    total += gathers;
  }
  CHECK(summary_of(run)["exposed_gather_time_s"].get<double>() == Approx(total / bars.size()).epsilon(1e-12));
}
