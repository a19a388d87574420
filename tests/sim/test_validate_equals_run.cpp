// `aggsim validate` is `aggsim run` without the simulation: every pairing of an algorithm with a
// compressor, and the scenarios only the platform can refute, are accepted or refused by both
// alike, with the same message; a refusal points at file:line:col and writes nothing.
#include <catch2/catch.hpp>
#include <filesystem>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "support/aggsim_list.hpp"
#include "support/algorithm_keys.hpp"
#include "support/cli.hpp"

using namespace aggsim::test;
namespace fs = std::filesystem;

namespace {

struct Verdicts {
  CliResult validate;
  CliResult run;
  bool wrote_output = false;
};

Verdicts validate_and_run(const std::string& yaml) {
  const auto dir = fresh_dir("verdict");
  write_file(dir / "s.yaml", yaml);
  Verdicts v;
  v.validate = run_aggsim({"validate", (dir / "s.yaml").string()});
  v.run = run_aggsim({"run", (dir / "s.yaml").string(), "--out", (dir / "out").string(), "-q"});
  v.wrote_output = fs::exists(dir / "out");
  fs::remove_all(dir);
  return v;
}

// Both accept, or both refuse with exit 2 and the same message.
void check_agree(const Verdicts& v) {
  INFO("validate: " << v.validate.exit_code << " " << v.validate.err);
  INFO("run: " << v.run.exit_code << " " << v.run.err);
  CHECK(v.validate.exit_code == v.run.exit_code);
  if (v.run.exit_code != 0) {
    CHECK(v.run.exit_code == 2);
    CHECK(v.validate.err == v.run.err);
    CHECK_FALSE(v.wrote_output);
  }
}

// The entry names `aggsim list` prints under `heading`.
std::vector<std::string> listed(const std::string& heading) {
  const auto r = run_aggsim({"list"});
  REQUIRE(r.exit_code == 0);
  return list_entry_names(list_section(r.out, heading));
}

std::string scenario(const std::string& algorithm, const std::string& compression,
                     const std::string& platform = "{topology: cluster, hosts: 4}", int ranks = 4) {
  return "seed: 3\nranks: " + std::to_string(ranks) + "\nsteps: 1\nplatform: " + platform +
         "\nnetwork: alpha_beta\nmodel: {size: 256kB, proxy_dim: 64}\nalgorithm: " + algorithm +
         "\ncompression: " + compression + "\n";
}

const std::regex kLocated(R"(^aggsim: error: [^\n]*s\.yaml:\d+:\d+: [a-z_.]+: )");

}  // namespace

TEST_CASE("validate and run agree on every algorithm with every compressor", "[validate]") {
  const auto algorithms = listed("Algorithms ");
  const auto compressors = listed("Compressors ");
  REQUIRE(algorithms.size() >= 11);
  REQUIRE(compressors.size() >= 11);
  int refused = 0, accepted = 0;
  for (const auto& a : algorithms)
    for (const auto& c : compressors) {
      INFO(a << " with " << c);
      const Verdicts v = validate_and_run(
          scenario("{name: " + a + required_algorithm_keys(a, 4) + "}", "{name: " + c + "}"));
      check_agree(v);
      if (v.run.exit_code == 0) {
        ++accepted;
      } else {
        ++refused;
        CHECK(std::regex_search(v.run.err, kLocated));
      }
    }
  // Reducing collectives refuse the non-summable compressors, decentralized schemes every one.
  CHECK(accepted > 0);
  CHECK(refused > 0);
}

TEST_CASE("validate and run agree on PowerSGD with an op it cannot compute", "[validate]") {
  const Verdicts v = validate_and_run(scenario("{name: ring_allreduce, op: max}", "{name: powersgd}"));
  check_agree(v);
  CHECK(v.validate.exit_code == 2);
  CHECK_THAT(v.validate.err, Catch::Contains("s.yaml:8:14: compression: powersgd on a reducing collective"));
}

TEST_CASE("validate refuses hierarchical_allreduce with unequal ranks per node, as run does", "[validate]") {
  // 6 ranks on nodes of 4 GPUs: node 0 holds 4 ranks, node 1 holds 2.
  const Verdicts v = validate_and_run(scenario("{name: hierarchical_allreduce}", "{name: none}",
                                               "{topology: cluster, nodes: 2, gpus_per_node: 4}", 6));
  check_agree(v);
  CHECK(v.validate.exit_code == 2);
  CHECK_THAT(
      v.validate.err,
      Catch::Contains("s.yaml:7:19: algorithm.name: hierarchical_allreduce needs the same number of ranks "
                      "on every node"));
  CHECK_THAT(v.validate.err, Catch::Contains("node 0: 4 rank(s), node 1: 2 rank(s)"));
  // The same layout with 8 ranks is accepted by both.
  check_agree(validate_and_run(scenario("{name: hierarchical_allreduce}", "{name: none}",
                                        "{topology: cluster, nodes: 2, gpus_per_node: 4}", 8)));
}

TEST_CASE("validate refuses torus2d_allreduce rows that do not divide the ranks, as run does", "[validate]") {
  const Verdicts v = validate_and_run(scenario("{name: torus2d_allreduce, rows: 3}", "{name: none}"));
  check_agree(v);
  CHECK(v.validate.exit_code == 2);
  CHECK_THAT(
      v.validate.err,
      Catch::Contains("s.yaml:7:44: algorithm.rows: torus2d_allreduce: rows 3 does not divide the 4 ranks"));
  CHECK(validate_and_run(scenario("{name: torus2d_allreduce, rows: 2}", "{name: none}")).validate.exit_code ==
        0);
}

TEST_CASE("validate refuses gossipgrad cube on an odd number of subgroups, as torchdistx and run do",
          "[validate][gossipgrad]") {
  // 12 ranks in subgroups of 4: 3 subgroups, known from the scenario alone.
  const Verdicts v = validate_and_run(scenario("{name: gossipgrad, schedule: cube, group_size: 4}",
                                               "{name: none}", "{topology: cluster, hosts: 12}", 12));
  check_agree(v);
  CHECK(v.validate.exit_code == 2);
  CHECK_THAT(
      v.validate.err,
      Catch::Contains("s.yaml:7:41: algorithm.schedule: gossipgrad: schedule cube needs an even number "
                      "of subgroups, as torchdistx's, got 3 (12 ranks in subgroups of group_size 4)"));
  // What works is named: dissemination, or the group sizes that give an even number.
  CHECK_THAT(v.validate.err, Catch::Contains("Use schedule: dissemination (any number of subgroups)"));
  CHECK_THAT(
      v.validate.err,
      Catch::Contains("group_size giving an even number: 1 (12 subgroups), 2 (6 subgroups), 3 (4 subgroups), "
                      "6 (2 subgroups)"));
  // Subgroups by node: 3 nodes of 2 GPUs, known only from the platform.
  const Verdicts by_node = validate_and_run(scenario("{name: gossipgrad, schedule: cube}", "{name: none}",
                                                     "{topology: cluster, nodes: 3, gpus_per_node: 2}", 6));
  check_agree(by_node);
  CHECK(by_node.validate.exit_code == 2);
  CHECK_THAT(
      by_node.validate.err,
      Catch::Contains("s.yaml:7:41: algorithm.schedule: gossipgrad: schedule cube needs an even number "
                      "of subgroups, as torchdistx's, got 3 (the ranks of each of 3 nodes (group_size 0))"));
  // Even counts pass both, powers of two or not (6 subgroups: torchdistx's own test), and
  // dissemination takes any count.
  for (const std::string alg : {"{name: gossipgrad, schedule: cube, group_size: 3}",
                                "{name: gossipgrad, schedule: cube, group_size: 2}",
                                "{name: gossipgrad, schedule: dissemination, group_size: 4}"}) {
    INFO(alg);
    const Verdicts ok = validate_and_run(scenario(alg, "{name: none}", "{topology: cluster, hosts: 12}", 12));
    check_agree(ok);
    CHECK(ok.run.exit_code == 0);
  }
  const Verdicts nodes6 = validate_and_run(scenario("{name: gossipgrad, schedule: cube}", "{name: none}",
                                                    "{topology: cluster, nodes: 6, gpus_per_node: 2}", 12));
  check_agree(nodes6);
  CHECK(nodes6.run.exit_code == 0);
}

TEST_CASE("validate and run agree on what only the platform can refute", "[validate]") {
  // Parameter server pinned to a host the platform does not have.
  check_agree(validate_and_run(scenario("{name: parameter_server, server_hosts: gpu-9}", "{name: none}")));
  // More ranks than the XML platform has hosts.
  const Verdicts v = validate_and_run(
      scenario("{name: ring_allreduce}", "{name: none}",
               "{file: " + std::string(AGGSIM_SOURCE_DIR) + "/platforms/cluster_16.xml}", 17));
  check_agree(v);
  CHECK(v.validate.exit_code == 2);
}

// The engine's log category shows each step's boundaries and each rank's aggregation.
TEST_CASE("the engine log category shows each step and each rank's aggregation at debug level", "[log]") {
  const auto dir = fresh_dir("log");
  write_file(dir / "s.yaml", scenario("{name: ring_allreduce}", "{name: none}"));
  const auto quiet = run_aggsim({"run", (dir / "s.yaml").string(), "--out", (dir / "a").string(), "-q"});
  const auto logged = run_aggsim({"run", (dir / "s.yaml").string(), "--out", (dir / "b").string(), "-q",
                                  "--log=aggsim_engine.thres:debug"});
  REQUIRE(quiet.exit_code == 0);
  REQUIRE(logged.exit_code == 0);
  CHECK(quiet.err.find("aggregation starts") == std::string::npos);
  for (int rank = 0; rank < 4; ++rank) {
    INFO("rank " << rank);
    const std::string r = "rank " + std::to_string(rank);
    CHECK_THAT(logged.err, Catch::Contains(r + ": step 0 begins"));
    CHECK_THAT(logged.err, Catch::Contains(r + " step 0: aggregation starts (1 bucket(s))"));
    CHECK_THAT(logged.err, Catch::Contains(r + " step 0: aggregation ends"));
    CHECK_THAT(logged.err, Catch::Contains(r + ": step 0 ends"));
    // Each line carries the simulated time and the rank's actor (the default log format).
    CHECK_THAT(logged.err, Catch::Contains("[rank-" + std::to_string(rank) + "@"));
  }
  CHECK_THAT(logged.err, Catch::Contains("simulation starts"));
  // Logging changes no output.
  CHECK(read_file(dir / "a" / "steps.csv") == read_file(dir / "b" / "steps.csv"));
  fs::remove_all(dir);
}
