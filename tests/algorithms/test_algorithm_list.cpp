// `aggsim list` names every all-reduce algorithm with its parameters and their defaults, and the
// scenario loader checks those parameters.
#include <catch2/catch.hpp>

#include "support/cli.hpp"
#include "support/reduction_check.hpp"

using namespace aggsim::test;

TEST_CASE("aggsim list shows every all-reduce algorithm with its parameters and defaults", "[list]") {
  const auto r = run_aggsim({"list"});
  REQUIRE(r.exit_code == 0);
  for (const char* name : {"ring_allreduce", "halving_doubling_allreduce", "recursive_doubling_allreduce", "tree_allreduce",
                           "double_binary_tree_allreduce", "hierarchical_allreduce", "torus2d_allreduce"})
    CHECK_THAT(r.out, Catch::Contains(name));
  CHECK_THAT(r.out, Catch::Contains("pieces the vector is pipelined in through the tree (default 1)"));
  CHECK_THAT(r.out, Catch::Contains("pieces each half is pipelined in through its tree (default 8)"));
  CHECK_THAT(r.out, Catch::Contains("(default ring; one of ring | halving_doubling | recursive_doubling | tree | double_binary_tree)"));
  CHECK_THAT(r.out, Catch::Contains("grid rows, must divide the rank count"));
}

TEST_CASE("algorithm parameters are checked against their specs when the scenario loads", "[list]") {
  const std::string yaml = R"(
ranks: 4
platform: {topology: cluster, hosts: 4}
algorithm: {name: hierarchical_allreduce, op: avg, inter: butterfly}
)";
  CHECK_THROWS_WITH(aggsim::load_scenario_text(yaml, "bad.yaml", {}), Catch::Contains("butterfly"));
  CHECK_THROWS(aggsim::load_scenario_text(R"(
ranks: 4
platform: {topology: cluster, hosts: 4}
algorithm: {name: tree_allreduce, op: avg, chunks: 0}
)", "bad.yaml", {}));
}
