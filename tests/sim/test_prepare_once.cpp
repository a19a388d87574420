// A run prepares its algorithm once: the scenario loader runs the prepare stage (its checks are
// errors at the scenario's keys, for `validate` too), and the run takes that stage when it read
// nothing of the platform; an algorithm that reads the platform is prepared again on it. Counted
// with algorithm_prepares() (each simulation in its own process).
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <sstream>

#include "algorithms/registry.hpp"
#include "sim/engine/simulation.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/scenario/scenario_loader.hpp"
#include "support/isolated.hpp"

using namespace aggsim;
using namespace aggsim::test;

namespace {

std::string scenario(const std::string& algorithm) {
  return fmt::format(R"(name: once
ranks: 8
steps: 2
platform: {{topology: cluster, nodes: 2, gpus_per_node: 4, bandwidth: 10Gbps, latency: 1us}}
network: alpha_beta
model: {{size: 64kB, proxy_dim: 256}}
algorithm: {{name: {}}}
)",
                     algorithm);
}

// Prepare stages run by loading the scenario and by then simulating it, and the run's time and
// bytes (to compare with a run that prepares again).
struct Counts {
  long at_load = 0;
  long at_run = 0;
  double sim_time_s = 0;
  double bytes = 0;
};

Counts count_prepares(const std::string& yaml, bool drop_loaded_stage) {
  const std::string text = run_isolated([&] {
    const long before = algorithm_prepares();
    Scenario sc = load_scenario_text(yaml, "once.yaml");
    const long loaded = algorithm_prepares();
    if (drop_loaded_stage) sc.prepared_at_load.reset();
    const SimulationResult r = simulate(sc, {});
    return fmt::format("{} {} {:.17g} {}", loaded - before, algorithm_prepares() - loaded, r.sim_time_s,
                       r.bytes_sent);
  });
  Counts c;
  std::istringstream(text) >> c.at_load >> c.at_run >> c.sim_time_s >> c.bytes;
  INFO(text);
  return c;
}

}  // namespace

TEST_CASE("a run takes the loader's prepare stage of an algorithm that does not read the platform") {
  for (const std::string algorithm : {"ring_allreduce", "double_binary_tree_allreduce", "parameter_server"}) {
    INFO(algorithm);
    const Counts once = count_prepares(scenario(algorithm), false);
    CHECK(once.at_load == 1);
    CHECK(once.at_run == 0);
    // The same run preparing again gives the same figures.
    const Counts again = count_prepares(scenario(algorithm), true);
    CHECK(again.at_run == 1);
    CHECK(again.sim_time_s == once.sim_time_s);
    CHECK(again.bytes == once.bytes);
  }
}

TEST_CASE("an algorithm that reads the platform is prepared again on it") {
  for (const std::string algorithm : {"hierarchical_allreduce", "nccl_allreduce"}) {
    INFO(algorithm);
    const Counts c = count_prepares(scenario(algorithm), false);
    CHECK(c.at_load == 1);
    CHECK(c.at_run == 1);
  }
}

TEST_CASE("the loader's prepare stage is taken once, and only for the configuration it was made for") {
  const std::string text = run_isolated([] {
    const Scenario sc = load_scenario_text(scenario("ring_allreduce"), "once.yaml");
    const AlgorithmConfig config = algorithm_config(sc);
    AlgorithmConfig other_ranks = config;
    other_ranks.world = 16;
    AlgorithmConfig other_op = config;
    other_op.op.kind = ReduceKind::sum;
    std::string out;
    out += sc.prepared_at_load->take_for(other_ranks) ? "1" : "0";
    out += sc.prepared_at_load->take_for(other_op) ? "1" : "0";
    out += sc.prepared_at_load->take_for(config) ? "1" : "0";
    out += sc.prepared_at_load->take_for(config) ? "1" : "0";  // already taken
    return out;
  });
  CHECK(text == "0010");
}
