// Input errors are input errors: combinations SimGrid cannot run are refused at their key before it
// starts (ns-3 with pieces that pay their own latency aborted with "internal error: ...
// set_lat_factor_cb: Feature unimplemented yet"), environment variables are checked with their name,
// and an option given an empty value names the option.
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <string>
#include <vector>

#include "support/cli.hpp"

using namespace aggsim::test;
namespace fs = std::filesystem;

namespace {

const std::string kSource = AGGSIM_SOURCE_DIR;

// Refused with exit status 2, each fragment on stderr, no "internal error" and nothing written.
void check_refused(const CliResult& r, const fs::path& dir, const std::vector<std::string>& fragments) {
  INFO(r.err);
  CHECK(r.exit_code == 2);
  for (const auto& f : fragments) CHECK_THAT(r.err, Catch::Contains(f));
  CHECK(r.err.find("internal error") == std::string::npos);
  CHECK_FALSE(fs::exists(dir / "out"));
}

}  // namespace

TEST_CASE("ns3 with an MSCCL program or NCCL's chunk movement is refused at network", "[input][ns3]") {
  const auto dir = fresh_dir("input-ns3");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {fmt::format("{{name: msccl, program: {}/tests/data/msccl/ring_allreduce_4.xml}}", kSource),
       "s.yaml:7:10: network: ns3 cannot run msccl: its pieces charge their route's latency themselves"},
      {"{name: nccl_allreduce, movement: chunk}",
       "s.yaml:7:10: network: ns3 cannot run nccl_allreduce with movement: chunk: its pieces charge their "
       "route's latency themselves, which SimGrid's ns-3 model does not allow; use network auto | lv08 | "
       "alpha_beta, or movement: flow"},
  };
  for (const auto& [algorithm, message] : cases) {
    INFO(algorithm);
    write_file(dir / "s.yaml",
               "name: n\nranks: 4\nsteps: 1\nplatform: {topology: cluster, hosts: 4}\n"
               "model: {size: 64KiB, math: off}\nalgorithm: " +
                   algorithm + "\nnetwork: ns3\n");
    for (const std::vector<std::string>& args : {std::vector<std::string>{"validate", "s.yaml"},
                                                std::vector<std::string>{"run", "s.yaml", "--out", "out"}})
      check_refused(run_aggsim(args, dir), dir, {message});
  }
  // The same algorithms at flow level, and under the other networks, run.
  write_file(dir / "s.yaml",
             "name: n\nranks: 4\nsteps: 1\nplatform: {topology: cluster, hosts: 4}\n"
             "model: {size: 64KiB, math: off}\nalgorithm: {name: nccl_allreduce}\nnetwork: ns3\n");
  const CliResult flow = run_aggsim({"validate", "s.yaml"}, dir);
  INFO(flow.err);
  CHECK(flow.exit_code == 0);
  fs::remove_all(dir);
}

TEST_CASE("an environment variable aggsim reads is checked with its name in the message", "[input][env]") {
  const auto dir = fresh_dir("input-env");
  const std::string aggsim = shell_quote(AGGSIM_BIN);
  // AGGSIM_SPAWN=bogus was an "internal error" (exit 1), and only where a child was started.
  for (const std::string args : {"validate default", "run default -q --out out", "list"})
    check_refused(run_shell("AGGSIM_SPAWN=bogus " + aggsim + " " + args, dir), dir,
                  {"aggsim: error: AGGSIM_SPAWN must be fork or exec, not 'bogus'"});
  check_refused(run_shell("AGGSIM_DATA=/nonexistent-aggsim-data " + aggsim + " validate default", dir), dir,
                {"AGGSIM_DATA=/nonexistent-aggsim-data: not a folder"});
  for (const std::string mode : {"fork", "exec", ""}) {
    const CliResult r = run_shell("AGGSIM_SPAWN=" + shell_quote(mode) + " " + aggsim + " validate default", dir);
    INFO(mode << ": " << r.err);
    CHECK(r.exit_code == 0);
  }
  fs::remove_all(dir);
}

TEST_CASE("an option given an empty value is named, and perf's --collective is checked", "[input][cli]") {
  const auto dir = fresh_dir("input-empty");
  // `perf --collective ''` gave a garbled message naming broadcast.
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"perf", "default", "--collective", ""}, "aggsim: error: --collective: the value is empty"},
      {{"perf", "default", "--collective="}, "aggsim: error: --collective: the value is empty"},
      {{"run", "default", "--out", ""}, "aggsim: error: --out: the value is empty"},
      {{"run", "default", "--set", ""}, "aggsim: error: --set: the value is empty"},
      {{"validate", ""}, "aggsim: error: scenario: the value is empty: give a file's name"},
      {{"perf", "default", "--collective", "broadcst", "--max", "64"},
       "aggsim: error: --collective: 'broadcst' is not a collective"},
  };
  for (const auto& [args, message] : cases) {
    INFO(args.back());
    const CliResult r = run_aggsim(args, dir);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Catch::StartsWith(message));
    CHECK(r.err.find("internal error") == std::string::npos);
  }
  fs::remove_all(dir);
}
