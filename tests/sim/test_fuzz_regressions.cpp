// Inputs in tests/fuzz/regressions/ (which the fuzzers also replay on every run), each with the
// error it must now give through the binary: once a crash, a stack overflow, an abort, an internal
// error, a run that "succeeded" without a result, or an echoed secret. Platform files are run
// through a two-rank scenario that names them, measurement logs through `compare`.
#include <catch2/catch.hpp>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "support/cli.hpp"

using namespace aggsim::test;
namespace fs = std::filesystem;

TEST_CASE("every fuzz regression input is an input error with its expected message", "[input][fuzz]") {
  const fs::path root = fs::path(AGGSIM_SOURCE_DIR) / "tests/fuzz/regressions";
  // file -> fragments expected on stderr
  const std::map<std::string, std::vector<std::string>> expected = {
      {"platform/radical-number-beyond-long.xml", {"radical"}},
      // SimGrid read radical="1e308GBps" as host 1, then aborted (exit 134) building the dragonfly.
      {"platform/dragonfly-radical-not-a-number.xml",
       {":7:3: <cluster>: radical=\"1e308GBps\": must be numbers and ranges"}},
      {"platform/dragonfly-leaf-count-overflow.xml", {":4:3: <cluster>:", "262144 leaves"}},
      {"platform/zones-500-deep.xml", {":67:1: <zone>:", "at most 64 deep"}},
      // Took 80 s to check under ASan (the fuzzer's timeout) before clusters were capped.
      {"platform/cluster-ten-million-hosts.xml", {":4:3: <cluster>:", "names more than 262144 hosts"}},
      // Found by the hostile corpus: SimGrid 3.32 crashed (SIGSEGV) looking up a route in an unsealed zone.
      {"platform/full-zone-without-routes.xml",
       {"full-zone-without-routes.xml: ranks 0 and 1 run on hosts 'a' and 'b'", "no route from 'a' to 'b'"}},
      {"scenario/flow-nesting-100000.yaml", {"flow-nesting-100000.yaml:1: nested more than 64 levels"}},
      {"scenario/block-nesting-200.yaml", {"block-nesting-200.yaml:65: nested more than 64 levels"}},
      {"scenario/size-2-to-the-63.yaml", {"size-2-to-the-63.yaml:3:15: model.size:", "below 2^63"}},
      {"scenario/not-utf8-name.yaml", {"not-utf8-name.yaml:1:10: the text is not valid UTF-8"}},
      // SimGrid aborted (exit 134) on core 0 or less, and ended with "invalid platform: stoi" beyond an int.
      {"platform/host-core-zero.xml", {":5:5: <host>:", "core=\"0\": must be a whole number of cores"}},
      {"platform/host-core-negative.xml", {":5:5: <host>:", "core=\"-3\": must be a whole number of cores"}},
      {"platform/host-core-beyond-int.xml",
       {":5:5: <host>:", "core=\"99999999999\": must be a whole number"}},
      // SimGrid read the leading digits: 1 core, without a word; "abc is not an int", without the element.
      {"platform/host-core-fraction.xml", {":5:5: <host>:", "core=\"1.5\": must be a whole number of cores"}},
      {"platform/host-pstate-not-a-number.xml", {":5:5: <host>:", "pstate=\"abc\": must be a whole number"}},
      // SimGrid's lexer gave the line only.
      {"platform/end-tag-mismatch.xml", {":9:8: malformed platform XML: invalid closing tag name"}},
      // Ran with SimGrid's "Deadlock detected", exited 0 with sim_time_s: null.
      {"platform/link-bandwidth-1e-300.xml", {":7:5: <link>:", "must be at least 1Bps"}},
      {"scenario/reduce-speed-1e-300.yaml",
       {"reduce-speed-1e-300.yaml:7:25: compute.reduce_speed:", "at least 1Bps"}},
      // 2 ranks x 10^9 numbers passed when one copy of the gradients was counted (8 GB against a
      // 12 GB limit), then used all of a 24 GB machine's memory and stalled (test_hostile_input.cpp
      // checks the limit on this machine); 64 ranks keep this file refused on any machine.
      {"scenario/proxy-dim-1e9-64-ranks.yaml",
       {"proxy-dim-1e9-64-ranks.yaml:4:31: model.proxy_dim: 64 ranks x 1000000000 numbers",
        "held about 5 times over"}},
      // Printed its first line: "shadow-format:1:1: root:*:20228:...: unknown key".
      {"scenario/shadow-format",
       {"shadow-format:1:1: (top level): not a scenario", "the file's text is not shown"}},
      // std::regex recursed once per character of the prefix: SIGSEGV.
      {"measurement/launcher-prefix-300KB.log",
       {"launcher-prefix-300KB.log:13: cannot tell which collective"}},
      // "internal error: stoi".
      {"measurement/rank-beyond-int.log", {"rank-beyond-int.log:4: the rank number", "beyond 4194304"}},
      // NCCL settings in every form the reader takes, one of them given a second value.
      {"measurement/nccl-settings-two-values.log",
       {"nccl-settings-two-values.log:5: NCCL_ALGO=tree here, but",
        "nccl-settings-two-values.log:1 says NCCL_ALGO=allreduce:ring;broadcast:tree: keep runs of one "
        "setting "
        "per file"}},
  };
  std::size_t seen = 0;
  for (const char* kind : {"platform", "scenario", "measurement"}) {
    for (const auto& entry : fs::directory_iterator(root / kind)) {
      const std::string name = std::string(kind) + "/" + entry.path().filename().string();
      INFO(name);
      const auto it = expected.find(name);
      REQUIRE(it != expected.end());  // a new regression input needs its expected error here
      ++seen;
      const auto dir = fresh_dir("fuzz-regression");
      std::string scenario = entry.path().string();
      if (std::string(kind) == "platform") {
        scenario = (dir / "s.yaml").string();
        write_file(scenario, "ranks: 2\nplatform: {file: " + entry.path().string() +
                                 "}\nalgorithm: {name: ring_allreduce}\n");
      }
      std::vector<std::vector<std::string>> commands = {{"validate", scenario},
                                                        {"run", scenario, "--out", (dir / "out").string()}};
      if (std::string(kind) == "measurement")
        commands = {{"compare",
                     (fs::path(AGGSIM_SOURCE_DIR) / "tests/data/calibration/roce_h100.yaml").string(),
                     entry.path().string(), "--csv", (dir / "out").string()}};
      for (const auto& args : commands) {
        const auto r = run_aggsim(args);
        INFO(args[0] << ": " << r.err);
        CHECK(r.exit_code == 2);
        for (const auto& f : it->second) CHECK(r.err.find(f) != std::string::npos);
        for (const std::string secret : {"root", "20228", "Zq8SecretHash"})
          CHECK(r.err.find(secret) == std::string::npos);
        CHECK_FALSE(fs::exists(dir / "out"));
      }
      fs::remove_all(dir);
    }
  }
  CHECK(seen == expected.size());
}
