// The figures read at a glance from 1 to 100 points: tests/sweep/figure_text.py draws each figure of
// real sweeps of 1, 9, 40 and 100 points (grid and zip keys mixed, a training workload so that every
// figure has data) and of traced runs of 1, 9, 40 and 100 ranks, and checks the drawn text: no two
// texts overlap, none below 7 pt, dot and value labels inside their axes, every CSV `label` drawn and
// naming one point.
#include <fmt/format.h>

#include <catch2/catch.hpp>

#include "sweep_support.hpp"

using namespace aggsim::test;
namespace fs = std::filesystem;

namespace {

const char* kPython = "/usr/bin/python3";

bool python_ready() {
  return std::system(fmt::format("{} -c 'import matplotlib, pandas, scipy' 2>/dev/null", kPython).c_str()) ==
         0;
}

// figure_text.py on `folder` for `figures`; its report in `log`.
int check_figures(const fs::path& folder, const std::string& figures, std::string& log) {
  const auto out = folder.parent_path() / (folder.filename().string() + ".log");
  const int status =
      std::system(fmt::format("{} {}/tests/sweep/figure_text.py {} {} > {} 2>&1", kPython, AGGSIM_SOURCE_DIR,
                              shell_quote(folder.string()), figures, shell_quote(out.string()))
                      .c_str());
  log = read_file(out);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// A tiny training run under alpha_beta; `sweep` is its sweep block.
std::string training_sweep(const std::string& sweep) {
  return R"(name: labels
seed: 3
ranks: 4
steps: 3
platform: {topology: cluster, hosts: 16, bandwidth: 10Gbps, latency: 1us}
network: alpha_beta
model: {size: 1MB}
algorithm: {name: ring_allreduce}
workload: {problem: softmax, dim: 8, classes: 3, eval_every: 1, eval_samples: 256, target_loss: 1.05}
sweep:
)" + sweep;
}

}  // namespace

TEST_CASE("every sweep figure's text stays legible at 1, 9, 40 and 100 points", "[analysis][labels]") {
  if (!python_ready()) {
    WARN("SKIPPED: /usr/bin/python3 cannot import matplotlib, pandas and scipy (installed by .ci/setup)");
    return;
  }
  const std::vector<std::pair<int, std::string>> sweeps = {
      {1, "  grid:\n    ranks: [4]\n"},
      // The README tour's shape: a zip of algorithm and compressor times a grid of bandwidths.
      {9,
       "  grid:\n    platform.bandwidth: [25Gbps, 100Gbps, 400Gbps]\n  zip:\n"
       "    algorithm.name: [ring_allreduce, tree_allreduce, ring_allreduce]\n"
       "    compression.name: [none, none, powersgd]\n"},
      // Sizes close together (1 MB beside 1.2 MB): ticks that would collide.
      {40,
       "  zip:\n    algorithm.name: [ring_allreduce, tree_allreduce, halving_doubling_allreduce, allgather]\n"
       "    compression.name: [none, none, none, topk]\n"
       "  grid:\n    model.size: [1MB, 1.2MB, 1.5MB, 2MB, 2.5MB, 3MB, 4MB, 5MB, 6MB, 8MB]\n"},
      {100,
       "  grid:\n    ranks: [2, 4, 8, 16]\n    model.size: [1MB, 2MB, 4MB, 8MB, 16MB]\n  zip:\n"
       "    algorithm.name: [ring_allreduce, tree_allreduce, halving_doubling_allreduce, ring_allreduce, "
       "allgather]\n"
       "    compression: [{name: none}, {name: none}, {name: none}, {name: randomk, shared_seed: true}, "
       "{name: topk}]\n"},
  };
  const auto dir = fresh_dir("figure-text");
  for (const auto& [points, block] : sweeps) {
    INFO(points << " points");
    const auto name = fmt::format("p{}", points);
    write_file(dir / (name + ".yaml"), training_sweep(block));
    const auto r = run_aggsim({"sweep", "run", name + ".yaml", "--jobs", "2", "--out", name}, dir);
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    REQUIRE(read_csv(dir / name / "results.csv").size() == static_cast<std::size_t>(points) + 1);
    std::string log;
    CHECK(check_figures(dir / name, "breakdown versus busbw loss bytes-loss time-to-target", log) == 0);
    INFO(log);
    CHECK_THAT(log, !Catch::Contains("FAIL"));
    for (const char* figure : {"breakdown", "versus", "busbw", "loss", "bytes-loss", "time-to-target"})
      CHECK_THAT(log, Catch::Contains(std::string("ok ") + figure + ":"));
  }
}

TEST_CASE("every traced run's figure stays legible at 1, 9, 40 and 100 ranks", "[analysis][labels]") {
  if (!python_ready()) {
    WARN("SKIPPED: /usr/bin/python3 cannot import matplotlib, pandas and scipy (installed by .ci/setup)");
    return;
  }
  const auto dir = fresh_dir("figure-text-runs");
  for (int ranks : {1, 9, 40, 100}) {
    INFO(ranks << " ranks");
    const auto name = fmt::format("r{}", ranks);
    write_file(dir / (name + ".yaml"), fmt::format(R"(name: {}
ranks: {}
steps: 2
platform: {{topology: cluster, hosts: {}, bandwidth: 10Gbps, latency: 1us}}
network: alpha_beta
model: {{layers: lenet, batch: 64, math: off}}
algorithm: {{name: ring_allreduce}}
output: {{trace: true}}
)",
                                                   name, ranks, ranks));
    const auto r = run_aggsim({"run", name + ".yaml", "--out", name, "-q"}, dir);
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    std::string log;
    // One rank sends nothing: no links, no bus bandwidth.
    CHECK(check_figures(dir / name,
                        ranks == 1 ? "timeline phases breakdown" : "timeline phases links breakdown busbw",
                        log) == 0);
    INFO(log);
    CHECK_THAT(log, !Catch::Contains("FAIL"));
  }
}
