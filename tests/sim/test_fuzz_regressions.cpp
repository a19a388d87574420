// Inputs in tests/fuzz/regressions/ (which the fuzzers also replay on every run), each with the
// error it must now give through the binary: once a crash, a stack overflow, an abort or an
// internal error. Platform files are run through a two-rank scenario that names them.
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
  };
  std::size_t seen = 0;
  for (const char* kind : {"platform", "scenario"}) {
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
      for (const std::string verb : {"validate", "run"}) {
        std::vector<std::string> args = {verb, scenario};
        if (verb == "run") args.insert(args.end(), {"--out", (dir / "out").string()});
        const auto r = run_aggsim(args);
        INFO(verb << ": " << r.err);
        CHECK(r.exit_code == 2);
        for (const auto& f : it->second) CHECK(r.err.find(f) != std::string::npos);
        CHECK_FALSE(fs::exists(dir / "out"));
      }
      fs::remove_all(dir);
    }
  }
  CHECK(seen == expected.size());
}
