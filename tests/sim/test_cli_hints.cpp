// Hints for the slips people make on the command line: several values in one --set, a sweep without
// its verb, an algorithm's short name, a layer table's name misspelt.
#include <catch2/catch.hpp>

#include "support/cli.hpp"

using namespace aggsim::test;

TEST_CASE("a comma list in --set points to sweep run --grid", "[cli][hints]") {
  for (const char* set : {"platform={topology: cluster, hosts: 16}", "ranks=16"}) {
    const auto r = run_aggsim(
        {"validate", "scenarios/default.yaml", "--set", set, "--set",
         std::string(set).rfind("ranks", 0) == 0 ? "ranks=8,16" : "platform.bandwidth=10Gbps,100Gbps"});
    INFO(r.err);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Catch::Contains("--set takes one value") &&
                          Catch::Contains("aggsim sweep run scenarios/default.yaml --grid "));
  }
  // A comma that is part of one value is no list: a parameter server's hosts.
  const auto ok =
      run_aggsim({"validate", "scenarios/default.yaml", "--set", "algorithm.name=parameter_server", "--set",
                  "algorithm.servers=2", "--set", "algorithm.server_hosts=host-3, host-5"});
  INFO(ok.err);
  CHECK(ok.exit_code == 0);
  // A comma list refused for another reason than its value gets no sweep hint (the platform is a file).
  const auto file =
      run_aggsim({"validate", "scenarios/default.yaml", "--set", "platform.bandwidth=1Gbps,2Gbps"});
  CHECK(file.exit_code == 2);
  CHECK_THAT(file.err, !Catch::Contains("--grid"));
}

TEST_CASE("aggsim sweep without a verb lists the verbs", "[cli][hints]") {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"sweep"}, {"sweep", "scenarios/default.yaml"}}) {
    const auto r = run_aggsim(args);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Catch::Contains("aggsim sweep expand | run | slurm | merge"));
  }
  CHECK(run_aggsim({"sweep", "--help"}).exit_code == 0);
}

TEST_CASE("short names of algorithms get a did-you-mean", "[cli][hints]") {
  for (const auto& [given, meant] :
       std::vector<std::pair<std::string, std::string>>{{"ring", "ring_allreduce"},
                                                        {"hierarchical", "hierarchical_allreduce"},
                                                        {"torus", "torus2d_allreduce"},
                                                        {"tree", "tree_allreduce"},
                                                        {"rign_allreduce", "ring_allreduce"}}) {
    const auto r = run_aggsim({"validate", "scenarios/default.yaml", "--set", "algorithm.name=" + given});
    INFO(given);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Catch::Contains("did you mean '" + meant + "'?"));
  }
  // "allreduce" is in seven names: no single guess.
  CHECK_THAT(run_aggsim({"validate", "scenarios/default.yaml", "--set", "algorithm.name=allreduce"}).err,
             !Catch::Contains("did you mean"));
}

TEST_CASE("shipped files are found by name from any folder, and a missing one lists what ships",
          "[cli][data]") {
  const auto dir = fresh_dir("by-name");
  const auto by_path = run_aggsim({"validate", "scenarios/default.yaml"}, dir);
  INFO(by_path.err);
  CHECK(by_path.exit_code == 0);
  CHECK_THAT(by_path.out,
             Catch::Contains(std::string(AGGSIM_SOURCE_DIR) + "/platforms/cluster_16.xml (16 hosts)"));
  CHECK(run_aggsim({"validate", "default", "--set", "platform.file=cluster_64", "--set", "ranks=64"}, dir)
            .exit_code == 0);
  const auto missing = run_aggsim({"validate", "default", "--set", "model.layers=resnet5"}, dir);
  CHECK(missing.exit_code == 2);
  CHECK_THAT(missing.err,
             Catch::Contains("--set model.layers=resnet5: model.layers: layer table file not found") &&
                 Catch::Contains("did you mean 'resnet50'?") &&
                 Catch::Contains("shipped: bert_base, gpt2_small, lenet"));
  const auto no_scenario = run_aggsim({"run", "nosuch.yaml"}, dir);
  CHECK(no_scenario.exit_code == 2);
  CHECK_THAT(no_scenario.err,
             Catch::Contains("nosuch.yaml: scenario file not found (looked for nosuch.yaml, "));
  // A file of the working directory wins over a shipped one of the same path.
  write_file(dir / "platforms/cluster_16.xml",
             read_file(std::string(AGGSIM_SOURCE_DIR) + "/platforms/cluster_64.xml"));
  CHECK_THAT(run_aggsim({"validate", "default"}, dir).out,
             Catch::Contains("platforms/cluster_16.xml (64 hosts)"));
}

TEST_CASE("a mistyped --grid key gets a did-you-mean on every scenario, XML platforms included",
          "[cli][hints]") {
  // default.yaml: ring_allreduce on platforms/cluster_16.xml, no compressor, no workload.
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"platform.bandwdith=1Gbps,2Gbps", "did you mean 'bandwidth'? a key of generated platforms"},
      {"platfrom.bandwidth=1Gbps,2Gbps", "did you mean 'platform'?"},
      {"algorithm.chnuks=2,3", "did you mean 'chunks', a key of algorithm tree_allreduce"},
      {"algorithm.chunks=2,3", "'chunks' is a key of algorithm tree_allreduce"},
      {"compression.rnak=1,2", "did you mean 'rank', a key of compressor powersgd, not of none?"},
      {"workload.dimm=2,3", "workload.dimm: unknown key (did you mean 'dim'?)"},
      {"model.sise=1MB,2MB", "did you mean 'size'?"},
  };
  for (const auto& [grid, hint] : cases) {
    const auto dir = fresh_dir("gridhint");
    const auto r = run_aggsim({"sweep", "expand", "default", "--grid", grid, "--out", "x"}, dir);
    INFO(grid << ": " << r.err);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Catch::Contains(hint));
    CHECK_FALSE(std::filesystem::exists(dir / "x/manifest.csv"));
  }
  // The same holds for --set of a run.
  const auto set = run_aggsim({"validate", "default", "--set", "platform.latnecy=1us"});
  CHECK_THAT(set.err, Catch::Contains("did you mean 'latency'? a key of generated platforms"));
}
