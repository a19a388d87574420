// Data-parallel groups of a tensor x pipeline x data layout (`parallel`): the ranks are ordered as
// Megatron-LM orders them, every group sends the closed-form bytes of its 1/tensor part of the
// model, groups on separate rails take the time of one group alone and groups sharing a NIC do not,
// and a layout that does not divide the ranks is refused at its key.
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "sim/engine/parallel_layout.hpp"
#include "sim/engine/simulation.hpp"
#include "sim/scenario/scenario_loader.hpp"
#include "support/cli.hpp"
#include "support/isolated.hpp"
#include "support/refusal.hpp"

using namespace aggsim;
using namespace aggsim::test;

namespace {

// 8 nodes of 8 GPUs with 8 NICs (one per rail) or one, the fabric as fast as a NIC.
std::string rails(int nics, const std::string& algorithm, const std::string& size,
                  const std::string& extra = "") {
  return fmt::format(R"(
seed: 3
ranks: 64
steps: 2
platform: {{topology: cluster, nodes: 8, gpus_per_node: 8, nics_per_node: {}, nic_bandwidth: 100Gbps,
           bandwidth: 100Gbps, latency: 1us}}
network: alpha_beta
compute: {{reduce_speed: 0}}
model: {{size: {}, math: off}}
algorithm: {{{}}}
parallel: {{tensor: 8}}
{}
)",
                     nics, size, algorithm, extra);
}

// One data-parallel group alone: 8 single-GPU nodes, each GPU with its own NIC as fast as a rail's.
std::string one_group(const std::string& algorithm, const std::string& size) {
  return fmt::format(R"(
seed: 3
ranks: 8
steps: 2
platform: {{topology: cluster, nodes: 8, nic_bandwidth: 100Gbps, bandwidth: 100Gbps, latency: 1us}}
network: alpha_beta
compute: {{reduce_speed: 0}}
model: {{size: {}, math: off}}
algorithm: {{{}}}
)",
                     size, algorithm);
}

struct Measured {
  double step_time = 0;
  std::vector<double> bytes;  // each rank's bytes sent in step 0 (of two: the last step of fsdp
                              // also gathers the final weights)
};

Measured measure(const std::string& yaml) {
  const std::string text = run_isolated([&] {
    const Scenario sc = load_scenario_text(yaml, "test.yaml");
    const SimulationResult r = simulate(sc, {});
    std::string out = fmt::format("T {:.17g} ", summarize_steps(r.log).front().step_time_s);  // step 0
    for (int rank = 0; rank < sc.ranks; ++rank) out += fmt::format("B {} ", r.log.at(rank, 0).bytes_sent);
    return out;
  });
  Measured m;
  std::istringstream in(text);
  for (std::string tag; in >> tag;) {
    double v;
    in >> v;
    if (tag == "T")
      m.step_time = v;
    else
      m.bytes.push_back(v);
  }
  return m;
}

}  // namespace

TEST_CASE("a parallel layout's data-parallel groups follow Megatron-LM's rank order", "[parallel]") {
  // Megatron-LM (megatron/core/parallel_state.py, order tp-cp-ep-dp-pp): ranks are numbered with the
  // tensor rank fastest, then the data rank, then the pipeline stage. Count them off in that order
  // and check every rank's place against the count.
  for (const auto& [tensor, pipeline, data] : std::vector<std::tuple<int, int, int>>{
           {1, 1, 4}, {8, 1, 8}, {2, 3, 4}, {4, 2, 1}, {1, 4, 3}, {3, 1, 5}}) {
    ParallelSpec parallel;
    parallel.tensor = tensor;
    parallel.pipeline = pipeline;
    const int ranks = tensor * pipeline * data;
    int counted = 0;
    for (int p = 0; p < pipeline; ++p)
      for (int d = 0; d < data; ++d)
        for (int t = 0; t < tensor; ++t, ++counted) {
          INFO("tensor " << tensor << " pipeline " << pipeline << " data " << data << " rank " << counted);
          const DataParallelPlace place = data_parallel_place(parallel, ranks, counted);
          CHECK(place.data_rank == d);
          CHECK(place.group_size == data);
          CHECK(place.group == t + tensor * p);
          // The group's members are the ranks of equal (t, p), in data order.
          for (int k = 0; k < data; ++k) CHECK(place.global_rank(k) == (p * data + k) * tensor + t);
        }
    CHECK(counted == ranks);
  }
}

TEST_CASE("every data-parallel group sends the closed-form bytes of its 1/tensor part",
          "[parallel][formula]") {
  // 64 ranks, tensor 8: D = 8 ranks a group, each holding 1/8 of a 64 MB model (8 MB = 2M fp32).
  constexpr double kPart = 64e6 / 8, kD = 8;
  SECTION("ring all-reduce: 2(D-1)/D of the part") {
    const Measured m = measure(rails(8, "name: ring_allreduce", "64MB"));
    REQUIRE(m.bytes.size() == 64);
    for (double b : m.bytes) CHECK(b == Approx(2 * (kD - 1) / kD * kPart).epsilon(1e-12));
  }
  SECTION("fsdp full sharding: 3(D-1)/D of the part") {
    const Measured m = measure(rails(8, "name: fsdp, sharding: full", "64MB"));
    REQUIRE(m.bytes.size() == 64);
    for (double b : m.bytes) CHECK(b == Approx(3 * (kD - 1) / kD * kPart).epsilon(1e-12));
  }
}

TEST_CASE("groups on their own rails take one group's time, groups sharing a NIC do not",
          "[parallel][rails]") {
  const Measured alone = measure(one_group("name: ring_allreduce", "8MB"));
  const Measured rail_per_group = measure(rails(8, "name: ring_allreduce", "64MB"));
  const Measured one_nic = measure(rails(1, "name: ring_allreduce", "64MB"));
  INFO("alone " << alone.step_time << " s, eight rails " << rail_per_group.step_time << " s, one NIC "
                << one_nic.step_time << " s");
  CHECK(rail_per_group.step_time == Approx(alone.step_time).epsilon(0.05));
  // Eight groups through one NIC a node: the bandwidth term is eight times one group's.
  CHECK(one_nic.step_time > 4 * alone.step_time);
  // fsdp's reduce-scatters and gathers contend the same way.
  const Measured fsdp_alone = measure(one_group("name: fsdp", "8MB"));
  const Measured fsdp_rails = measure(rails(8, "name: fsdp", "64MB"));
  CHECK(fsdp_rails.step_time == Approx(fsdp_alone.step_time).epsilon(0.05));
}

TEST_CASE("summary.json names the parallel layout and its group count", "[parallel][outputs]") {
  const auto dir = fresh_dir("parallel-summary");
  write_file(dir / "s.yaml", rails(8, "name: ring_allreduce", "8MB"));
  const auto r = run_aggsim({"run", "s.yaml", "--out", "out"}, dir);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto summary = nlohmann::json::parse(read_file(dir / "out" / "summary.json"));
  CHECK(summary.at("parallel").at("tensor") == 8);
  CHECK(summary.at("parallel").at("data") == 8);
  CHECK(summary.at("parallel").at("pipeline") == 1);
  CHECK(summary.at("data_parallel_groups") == 8);
  CHECK(read_file(dir / "out" / "resolved.yaml").find("parallel: {tensor: 8, pipeline: 1}") !=
        std::string::npos);
}

TEST_CASE("a parallel layout that does not divide the ranks is refused at its key", "[parallel][input]") {
  const std::string base = "ranks: 12\nplatform: {topology: cluster, nodes: 12}\nmodel: {math: off}\n";
  check_refused(base + "parallel: {tensor: 8}\n",
                {"bad.yaml:4:", "parallel.tensor", "does not divide the 12 ranks"});
  check_refused(base + "parallel: {tensor: 2, pipeline: 2}\n",
                {"bad.yaml:4:", "parallel.pipeline", "not simulated"});
  check_refused(base + "parallel: {tensor: 0}\n", {"bad.yaml:4:", "tensor"});
  check_refused(base + "parallel: {tensor: 2, data: 6}\n", {"bad.yaml:4:", "data"});
  check_refused("ranks: 12\nplatform: {topology: cluster, nodes: 12}\nparallel: {tensor: 2}\n",
                {"bad.yaml:3:", "parallel.tensor", "math: off"});
}
