// No text of an input file appears in an error unless the file is of the kind expected there (a
// scenario's known top-level keys, a platform's <platform> root, a log's table header): a
// scenario handed to someone else must not copy a secret into their logs. The fixture is a file
// in /etc/shadow's format, made here (the real one is never read).
#include <catch2/catch.hpp>
#include <filesystem>
#include <string>
#include <vector>

#include "support/cli.hpp"
#include "support/scenarios.hpp"

using namespace aggsim::test;
namespace fs = std::filesystem;

namespace {

// Valid YAML (a mapping with one key per line), valid as nothing aggsim reads.
const char* kShadow =
    "root:*:20228:0:99999:7:::\n"
    "alice:$6$saltsalt$Zq8HashOfAlicesPassword:20228:0:99999:7:::\n";
// What must never show: any piece of the file's lines.
const std::vector<std::string> kSecrets = {"root", "alice", "20228", "99999", "Zq8Hash", "saltsalt", "$6$"};

void check_no_secret(const CliResult& r, const std::string& where) {
  INFO(r.err);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::StartsWith("aggsim: error: "));
  CHECK_THAT(r.err, Catch::Contains(where));
  for (const auto& secret : kSecrets) CHECK_THAT(r.err, !Catch::Contains(secret));
}

}  // namespace

TEST_CASE("a file in /etc/shadow's format is never echoed, wherever it is given", "[input][secrets]") {
  const auto dir = fresh_dir("secrets");
  write_file(dir / "shadow", kShadow);
  write_file(dir / "s.yaml", kSmallScenario);
  write_file(dir / "cal.yaml", std::string(kSmallScenario) + "calibration: shadow\n");
  write_file(dir / "layers.yaml",
             "ranks: 4\nplatform: {topology: cluster, hosts: 4}\nmodel: {layers: shadow}\n"
             "algorithm: {name: ring_allreduce}\n");
  write_file(dir / "xml.yaml",
             "ranks: 2\nplatform: {file: shadow}\nmodel: {size: 1MB}\nalgorithm: {name: ring_allreduce}\n");
  struct Case {
    std::vector<std::string> args;
    std::string where;  // the location the error gives instead
  };
  const std::vector<Case> cases = {
      {{"shadow"}, "shadow:1:1: (top level): not a scenario"},
      {{"cal.yaml"}, "shadow:1:1: (top level): not a calibration file"},
      {{"s.yaml", "--set", "calibration=shadow"}, "shadow:1:1: (top level): not a calibration file"},
      {{"layers.yaml"}, "shadow:1:1: (top level): not a layer table"},
      {{"xml.yaml"}, "shadow:1:1: not a SimGrid platform: no XML element found"},
  };
  for (const auto& c : cases)
    for (const std::string verb : {"validate", "run"}) {
      std::vector<std::string> args = {verb};
      args.insert(args.end(), c.args.begin(), c.args.end());
      if (verb == "run") args.insert(args.end(), {"--out", "out"});
      INFO(args[1]);
      check_no_secret(run_aggsim(args, dir), c.where);
      CHECK(!fs::exists(dir / "out"));
    }
  // As a sweep file, with or without command-line axes, and as a measurement log.
  check_no_secret(run_aggsim({"sweep", "expand", "shadow", "--out", "sw"}, dir),
                  "shadow:1:1: (top level): not a sweep file");
  check_no_secret(run_aggsim({"sweep", "expand", "shadow", "--grid", "ranks=2,4", "--out", "sw"}, dir),
                  "shadow:1:1: (top level): not a sweep file");
  check_no_secret(run_aggsim({"compare", "s.yaml", "shadow"}, dir), "shadow:1: no measurement found");
  CHECK(!fs::exists(dir / "sw"));
}

TEST_CASE("keys and values of a file that is not of its kind stay out of errors", "[input][secrets]") {
  const auto dir = fresh_dir("secrets-yaml");
  // Duplicate keys (the duplicate check names keys), a list, a single value, a bad escape (yaml-cpp
  // appends the character), none of which are scenarios.
  write_file(dir / "dup.yaml", "API_TOKEN: 1\nAPI_TOKEN: 2\n");
  write_file(dir / "list.yaml", "- API_TOKEN\n- hunter2\n");
  write_file(dir / "scalar.yaml", "API_TOKEN hunter2\n");
  write_file(dir / "escape.yaml", "API_TOKEN: \"hunter2\\q\"\n");
  for (const std::string file : {"dup.yaml", "list.yaml", "scalar.yaml", "escape.yaml"}) {
    INFO(file);
    const auto r = run_aggsim({"validate", file}, dir);
    INFO(r.err);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Catch::StartsWith("aggsim: error: " + file + ":1:"));
    CHECK_THAT(r.err, !Catch::Contains("API_TOKEN"));
    CHECK_THAT(r.err, !Catch::Contains("hunter2"));
  }
  // A scenario (its keys are a scenario's) keeps its helpful errors: a misspelt key is named.
  write_file(dir / "typo.yaml", std::string(kSmallScenario) + "stpes: 3\n");
  const auto r = run_aggsim({"validate", "typo.yaml"}, dir);
  INFO(r.err);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains("typo.yaml:13:1: stpes: unknown key (did you mean 'steps'?)"));
}
