// A simulation runs on a stack of its own, sized for the deepest recursion of SimGrid's bandwidth
// solver (lmm::System::update_modified_cnst_set_rec: one frame per constraint a change reaches), not
// on its caller's. Without it, 4,096 nodes of 8 GPUs and 8 NICs overflowed the main thread's 8 MiB
// (87,266 frames deep under gdb). The same recursion on 128 such nodes is about 2,600 frames
// (measured the same way), more than a 256 KiB stack holds: a caller on such a stack crashed.
#include <fmt/format.h>
#include <pthread.h>

#include <catch2/catch.hpp>
#include <functional>
#include <string>

#include "sim/engine/simulation.hpp"
#include "sim/engine/solver_stack.hpp"
#include "sim/platform/endpoints.hpp"
#include "sim/scenario/scenario_loader.hpp"
#include "support/isolated.hpp"

using namespace aggsim;
using namespace aggsim::test;

namespace {

std::string rail_scenario(int nodes) {
  return fmt::format(R"(name: rails
ranks: {}
steps: 1
platform: {{topology: cluster, nodes: {}, gpus_per_node: 8, nics_per_node: 8, nvswitch: true,
            intra_bandwidth: 450GBps, bandwidth: 400Gbps, latency: 1us}}
model: {{size: 100MiB, math: off}}
algorithm: {{name: nccl_allreduce}}
compute: {{reduce_speed: 0}}
)",
                     nodes * 8, nodes);
}

// Runs `work` on a thread of `stack_bytes` of stack and waits for it.
void on_small_stack(std::size_t stack_bytes, const std::function<void()>& work) {
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, stack_bytes);
  pthread_t thread{};
  auto run = [](void* w) -> void* {
    (*static_cast<const std::function<void()>*>(w))();
    return nullptr;
  };
  REQUIRE(pthread_create(&thread, &attr, run, const_cast<std::function<void()>*>(&work)) == 0);
  pthread_attr_destroy(&attr);
  pthread_join(thread, nullptr);
}

}  // namespace

TEST_CASE("a simulation called on a small stack runs its solver on its own stack", "[solver_stack]") {
  const std::string text = run_isolated([] {
    std::string out;
    on_small_stack(256 << 10, [&] {
      const Scenario sc = load_scenario_text(rail_scenario(128), "rails.yaml");
      const SimulationResult r = simulate(sc, {});
      out = fmt::format("{:.9g}", r.sim_time_s);
    });
    return out;
  });
  INFO(text);
  REQUIRE(text.rfind("EXCEPTION", 0) == std::string::npos);
  CHECK(std::stod(text) > 0);
}

TEST_CASE("the simulation's stack holds the solver's recursion over every link of the largest platform",
          "[solver_stack]") {
  // The largest multi-GPU platform aggsim builds, and what check_platform (on the simulation's stack)
  // counts of it: the recursion reaches at most one frame per link direction.
  const std::string text = run_isolated([] {
    std::size_t capacity = 0;
    run_on_simulation_stack([&] { capacity = solver_stack_link_capacity(); });
    const Scenario sc = load_scenario_text(rail_scenario(static_cast<int>(kMaxMultiGpuNodes)), "rails.yaml");
    check_platform(sc, {});  // refuses a platform whose links outgrow the stack
    return fmt::format("{}", capacity);
  });
  INFO(text);
  REQUIRE(text.rfind("EXCEPTION", 0) == std::string::npos);
  // 8,192 nodes of 8 GPUs and 8 NICs: each GPU's link, each NIC and each fabric plane link, both
  // directions, is 3 x 65,536 x 2 = 393,216 constraints; the main thread's 8 MiB holds 87,000.
  CHECK(std::stoull(text) >= 3ull * 65536 * 2);
}

TEST_CASE("a platform with more links than the stack holds is refused, naming the count", "[solver_stack]") {
  const std::string text = run_isolated([] {
    std::string message;
    run_on_simulation_stack([&] {
      try {
        check_solver_stack(solver_stack_link_capacity() + 1, "p.yaml:3: platform");
      } catch (const std::exception& e) {
        message = e.what();
      }
    });
    return message;
  });
  CHECK_THAT(text, Catch::Contains("p.yaml:3: platform") && Catch::Contains("links") &&
                       Catch::Contains("fewer links"));
}
