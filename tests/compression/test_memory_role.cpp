// The memory role through the real binary: `memory: residual` is error feedback (the same run as
// `error_feedback: true`, and not the run without it), conflicting keys are refused at the key,
// and PowerSGD's own aggregation takes the memory too.
#include <fmt/format.h>

#include <catch2/catch.hpp>

#include "compressor_fixture.hpp"
#include "support/cli.hpp"

using namespace aggsim::test;
namespace fs = std::filesystem;

namespace {

// steps.csv of one run of `compression` (the inside of the YAML map) on 4 ranks.
std::string steps_of(const fs::path& dir, const std::string& tag, const std::string& algorithm,
                     const std::string& compression) {
  const fs::path scenario = dir / (tag + ".yaml");
  std::string text = compression_scenario(4, "size: 4MB, proxy_dim: 600", algorithm, compression);
  text.replace(text.find("steps: 2"), 8, "steps: 6");
  write_file(scenario, text + "workload: {problem: least_squares, dim: 600, lr: 0.05}\n");
  const CliResult r = run_aggsim({"run", scenario.string(), "--out", (dir / tag).string(), "-q"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return read_file(dir / tag / "steps.csv");
}

}  // namespace

TEST_CASE("memory residual is error feedback, memory none is none, on every transport",
          "[compression][memory]") {
  const fs::path dir = fresh_dir("memory-role");
  struct Case {
    std::string algorithm, compressor;
  };
  for (const Case& c : {Case{"name: allgather", "name: topk, ratio: 0.05"},
                        Case{"name: ring_allreduce", "name: powersgd, rank: 2"},
                        Case{"name: parameter_server", "name: qsgd, levels: 4"}}) {
    INFO(c.algorithm << " / " << c.compressor);
    const std::string residual = steps_of(dir, "residual", c.algorithm, c.compressor + ", memory: residual");
    const std::string shorthand =
        steps_of(dir, "shorthand", c.algorithm, c.compressor + ", error_feedback: true");
    const std::string none = steps_of(dir, "none", c.algorithm, c.compressor + ", memory: none");
    const std::string plain = steps_of(dir, "plain", c.algorithm, c.compressor);
    CHECK(residual == shorthand);
    CHECK(none == plain);
    // The residual changes what is sent, so training differs (the loss columns).
    CHECK(residual != none);
    fs::remove_all(dir / "residual");
    fs::remove_all(dir / "shorthand");
    fs::remove_all(dir / "none");
    fs::remove_all(dir / "plain");
  }
  fs::remove_all(dir);
}

TEST_CASE("contradicting or unknown memories are refused at the key", "[compression][memory][errors]") {
  const fs::path dir = fresh_dir("memory-errors");
  const fs::path scenario = dir / "s.yaml";
  struct Case {
    std::string compression;
    std::vector<std::string> fragments;
  };
  for (const Case& c : {Case{"name: topk, error_feedback: true, memory: none",
                             {"s.yaml:9:", "memory", "error_feedback: true is memory: residual"}},
                        Case{"name: topk, memory: momentum", {"s.yaml:9:", "memory", "none | residual"}},
                        Case{"name: none, memory: residual", {"s.yaml:9:", "memory"}}}) {
    INFO(c.compression);
    write_file(scenario, compression_scenario(4, "size: 1MB", "name: allgather", c.compression));
    for (const char* verb : {"validate", "run"}) {
      std::vector<std::string> args = {verb, scenario.string()};
      if (std::string(verb) == "run") args.insert(args.end(), {"--out", (dir / "out").string()});
      const CliResult r = run_aggsim(args);
      INFO(verb << ": " << r.err);
      CHECK(r.exit_code == 2);
      for (const auto& f : c.fragments) CHECK(r.err.find(f) != std::string::npos);
      CHECK_FALSE(fs::exists(dir / "out"));
    }
  }
  fs::remove_all(dir);
}
