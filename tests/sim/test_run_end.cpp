// No success without a result: rates so slow that a step could not finish are refused at their key
// with the bound, and a run that still deadlocks or whose clock leaves the finite numbers fails
// naming the cause, with nothing written.
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <string>

#include "sim/core/error.hpp"
#include "sim/engine/simulation.hpp"
#include "sim/scenario/scenario_loader.hpp"
#include "support/cli.hpp"
#include "support/isolated.hpp"
#include "support/scenarios.hpp"

using namespace aggsim;
using namespace aggsim::test;
namespace fs = std::filesystem;

TEST_CASE("rates below one byte or one flop a second are refused at their key, in validate and run",
          "[input][rates]") {
  const auto dir = fresh_dir("rates");
  write_file(dir / "s.yaml", kSmallScenario);
  struct Case {
    std::string set, fragment;
  };
  // 1e-300 B/s was accepted and the run printed SimGrid's deadlock and exited 0 with sim_time_s: null.
  const std::vector<Case> cases = {
      {"compute={reduce_speed: 1e-300Bps}", "compute.reduce_speed: must be host, 0 (free) or at least 1Bps"},
      {"compute={reduce_speed: 0.5Bps}", "compute.reduce_speed: must be host, 0 (free) or at least 1Bps"},
      {"platform.bandwidth=1e-305Bps", "platform.bandwidth: must be at least 1Bps (8bps)"},
      {"platform.bandwidth=4bps", "platform.bandwidth: must be at least 1Bps (8bps)"},
      {"platform.speed=1e-300f", "platform.speed: must be at least 1f"},
      {"platform.overrides=[{hosts: host-1, bandwidth: 1e-300Bps}]",
       "platform.overrides[0].bandwidth: must be at least 1Bps"},
  };
  for (const auto& c : cases)
    for (const std::string verb : {"validate", "run"}) {
      INFO(c.set << " " << verb);
      std::vector<std::string> args = {verb, "s.yaml", "--set", c.set};
      if (verb == "run") args.insert(args.end(), {"--out", "out"});
      const auto r = run_aggsim(args, dir);
      INFO(r.err);
      CHECK(r.exit_code == 2);
      CHECK_THAT(r.err, Catch::Contains(c.fragment));
      CHECK(!fs::exists(dir / "out"));
    }
  // The bounds themselves are accepted.
  for (const std::string set :
       {"compute={reduce_speed: 1Bps}", "platform.bandwidth=8bps", "platform.speed=1f"}) {
    INFO(set);
    CHECK(run_aggsim({"validate", "s.yaml", "--set", set}, dir).exit_code == 0);
  }
}

TEST_CASE("a run whose simulated time becomes infinite exits 1 naming the cause and writes nothing",
          "[run][end]") {
  const auto dir = fresh_dir("infinite-time");
  // Two links of 1e308 s on the one route: each is a finite latency, their sum is not.
  write_file(dir / "p.xml",
             "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
             "<platform version=\"4.1\">\n  <zone id=\"z\" routing=\"Full\">\n"
             "    <host id=\"a\" speed=\"1Gf\"/>\n    <host id=\"b\" speed=\"1Gf\"/>\n"
             "    <link id=\"l\" bandwidth=\"1Gbps\" latency=\"1e308s\"/>\n"
             "    <link id=\"m\" bandwidth=\"1Gbps\" latency=\"1e308s\"/>\n"
             "    <route src=\"a\" dst=\"b\"><link_ctn id=\"l\"/><link_ctn id=\"m\"/></route>\n"
             "  </zone>\n</platform>\n");
  write_file(
      dir / "s.yaml",
      "ranks: 2\nsteps: 1\nplatform: {file: p.xml}\nmodel: {size: 1MB}\nalgorithm: {name: ring_allreduce}\n");
  const auto r = run_aggsim({"run", "s.yaml", "--out", "out"}, dir);
  INFO(r.err);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Catch::Contains("aggsim: error: the simulation did not finish: the simulated time became "
                                    "infinite in step 1 of 1 (0 of 2 ranks finished it)"));
  CHECK_THAT(r.err, !Catch::Contains("internal error"));
  CHECK(!fs::exists(dir / "out"));
}

TEST_CASE("a run that deadlocks fails naming the step and the ranks, instead of ending as a success",
          "[run][end]") {
  // The loader refuses the one deadlocking combination known (an asynchronous parameter server by
  // layer, each bucket's server waiting for the previous one's); set past the loader, it must make
  // the engine report the deadlock rather than return a run with missing steps.
  const std::string text = run_isolated([] {
    Scenario sc = load_scenario_text(
        "ranks: 4\nsteps: 3\nplatform: {topology: cluster, hosts: 5, bandwidth: 10Gbps, latency: 1us}\n"
        "network: alpha_beta\nmodel: {layers: " AGGSIM_SOURCE_DIR
        "/scenarios/models/resnet50.yaml, batch: 32}\n"
        "algorithm: {name: parameter_server, servers: 1, placement: dedicated, asynchronous: true}\n",
        "deadlock.yaml");
    sc.algorithm.granularity = Granularity::layer;
    sc.algorithm.bucket_bytes = 25'000'000;
    try {
      const auto result = simulate(sc, {"--log=root.thres:critical"}, {});
      return fmt::format("finished at {} s", result.sim_time_s);
    } catch (const SimulationError& e) {
      return std::string("SimulationError: ") + e.what();
    }
  });
  INFO(text);
  CHECK_THAT(text, Catch::StartsWith("SimulationError: the simulation deadlocked at "));
  CHECK_THAT(text, Catch::Contains(" s in step 1 of 3 (1 of 4 ranks finished it): ranks wait for "));
}
