// `--set compression.name=...` / `--set algorithm.name=...` on a scenario whose mapping holds keys of
// its own choice: those keys are dropped with a note on stderr, so a shipped scenario's advice to
// compare with another compressor works; a key given by --set itself is never dropped.
#include <catch2/catch.hpp>
#include <filesystem>
#include <string>

#include "support/cli.hpp"

using namespace aggsim::test;
namespace fs = std::filesystem;

namespace {
const std::string kDropNote =
    "aggsim: note: --set compression.name=none: compression.rank (scenarios/convergence_powersgd.yaml:14:31) "
    "dropped: compressor none does not take it\n"
    "aggsim: note: --set compression.name=none: compression.error_feedback "
    "(scenarios/convergence_powersgd.yaml:14:40) dropped: compressor none does not take it\n";
}

TEST_CASE("the shipped PowerSGD scenario validates and runs with --set compression.name=none, as it advises",
          "[input][choice]") {
  const auto v =
      run_aggsim({"validate", "scenarios/convergence_powersgd.yaml", "--set", "compression.name=none"});
  INFO(v.err);
  REQUIRE(v.exit_code == 0);
  CHECK(v.err == kDropNote);

  const auto dir = fresh_dir("set-choice");
  const auto r = run_aggsim({"run", "scenarios/convergence_powersgd.yaml", "--set", "compression.name=none",
                             "--set", "steps=2", "--out", (dir / "out").string(), "-q"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.err == kDropNote);
  const std::string resolved = read_file(dir / "out" / "resolved.yaml");
  CHECK(resolved.find("compression:\n  name: none\n") != std::string::npos);
  CHECK(resolved.find("  rank:") == std::string::npos);
  CHECK(resolved.find("error_feedback") == std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("the same --set of the file's own choice drops nothing", "[input][choice]") {
  const auto v =
      run_aggsim({"validate", "scenarios/convergence_powersgd.yaml", "--set", "compression.name=powersgd"});
  INFO(v.err);
  CHECK(v.exit_code == 0);
  CHECK(v.err.empty());
}

TEST_CASE("a key set together with the new choice is never dropped: unknown to it, it is an error",
          "[input][choice]") {
  const auto v = run_aggsim({"validate", "scenarios/convergence_powersgd.yaml", "--set",
                             "compression.name=none", "--set", "compression.rank=4"});
  CHECK(v.exit_code == 2);
  CHECK(v.err.find("--set compression.rank=4: compression.rank: unknown key") != std::string::npos);
}
