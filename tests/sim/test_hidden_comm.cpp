// hidden_comm_time_s: the part of the aggregation calls' own time that ran while the rank computed.
// The formula on hand-made records, the ring's closed form under DDP buckets, and NCCL's short calls,
// which hide entirely behind the backward pass.
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "sim/metrics/step_log.hpp"
#include "support/cli.hpp"
#include "support/csv.hpp"

using namespace aggsim;
using namespace aggsim::test;
namespace fs = std::filesystem;

namespace {

// steps.csv as one map per row.
std::vector<std::map<std::string, double>> steps_of(const fs::path& run) {
  const auto cells = parse_csv(read_file(run / "steps.csv"));
  std::vector<std::map<std::string, double>> rows;
  for (std::size_t r = 1; r < cells.size(); ++r) {
    std::map<std::string, double> row;
    for (std::size_t c = 0; c < cells[0].size(); ++c)
      if (!cells[r][c].empty()) row[cells[0][c]] = std::stod(cells[r][c]);
    rows.push_back(row);
  }
  return rows;
}

fs::path run(const fs::path& dir, const std::string& name, const std::string& yaml,
             const std::vector<std::string>& sets = {}) {
  write_file(dir / (name + ".yaml"), yaml);
  std::vector<std::string> args = {"run", name + ".yaml", "--out", name, "-q"};
  for (const auto& s : sets) args.insert(args.end(), {"--set", s});
  const auto r = run_aggsim(args, dir);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return dir / name;
}

}  // namespace

TEST_CASE("hidden_part: a call's time inside the compute and the step's window, never more than the call",
          "[hidden]") {
  // Compute [1, 5]; a call [2, 3] lies inside it, [4, 7] half, [6, 8] after it.
  CHECK(hidden_part(2, 3, 1, 5, 0.0) == 1);
  CHECK(hidden_part(4, 7, 1, 5, 0.0) == 1);
  CHECK(hidden_part(6, 8, 1, 5, 0.0) == 0);
  // Still computing when the call ends (compute_end = the call's end): all of it.
  CHECK(hidden_part(4, 7, 1, 7, 0.0) == 3);
  // The window starts at 2.5: only what follows counts; unknown start (a rank still in the previous
  // step's aggregation, so the window starts after the call): nothing.
  CHECK(hidden_part(2, 3, 1, 5, 2.5) == 0.5);
  CHECK(hidden_part(2, 3, 1, 5, std::nullopt) == 0);
}

TEST_CASE("steps.csv's hidden share is the critical rank's, and with the exposed part it is its calls' time",
          "[hidden]") {
  StepLog log(2, 2);
  CHECK(log.window_start(0) == 0.0);
  CHECK_FALSE(log.window_start(1).has_value());
  // Step 0. Rank 0: compute [0, 4], calls [1, 2] and [3, 6] (2 s hidden, 2 exposed). Rank 1: compute
  // [0, 5], calls [2, 3] and [5, 6] (1 hidden, 1 exposed).
  auto& a = log.at(0, 0);
  a.start = 0, a.compute_end = 4, a.agg_start = 1, a.agg_end = 6;
  a.hidden_comm = hidden_part(1, 2, 0, 4, log.window_start(0)) + hidden_part(3, 6, 0, 4, log.window_start(0));
  auto& b = log.at(1, 0);
  b.start = 0, b.compute_end = 5, b.agg_start = 2, b.agg_end = 6;
  b.hidden_comm = hidden_part(2, 3, 0, 5, log.window_start(0)) + hidden_part(5, 6, 0, 5, log.window_start(0));
  log.aggregation_ended(0, 6);
  CHECK_FALSE(log.window_start(1).has_value());  // rank 1 has not ended step 0
  log.aggregation_ended(0, 6);
  REQUIRE(log.window_start(1) == 6.0);
  const auto steps = summarize_steps(log);
  REQUIRE(steps.size() == 2);
  // The critical rank is rank 0 (2 s exposed); its calls took 1 + 3 = 4 s.
  CHECK(steps[0].exposed_comm_time_s == 2);
  CHECK(steps[0].hidden_comm_time_s == 2);
  CHECK(steps[0].exposed_comm_time_s + steps[0].hidden_comm_time_s == 4);
  CHECK(steps[0].comm_time_s == 5);  // the window the old hatch showed: wider than the calls
}

TEST_CASE("DDP buckets on a ring: the calls during the backward pass are hidden, the last one exposed",
          "[hidden][timing]") {
  // Three layers, 0B buckets: one all-reduce per layer in backward order (l2, l1, l0), each started
  // when its layer's backward pass ends. Every call but the last ends before the next layer's
  // backward pass does, so hidden = c(l2) + c(l1) and exposed = c(l0), with the alpha-beta ring's
  // c(n) = 2(p-1)(alpha + 4n / (p beta)).
  constexpr double p = 4, alpha = 2e-6, beta = 10e9 / 8, speed = 1e9, batch = 2;
  const std::vector<double> params = {100400, 40100, 1000}, forward = {2e5, 8e4, 1e3};
  const auto cost = [&](double elements) { return 2 * (p - 1) * (alpha + 4 * elements / p / beta); };
  const auto dir = fresh_dir("hidden_ring");
  write_file(dir / "three.yaml",
             fmt::format("name: three\nlayers:\n"
                         "  - {{name: l0, shape: [400, 250], params: 100400, forward_flops: {}}}\n"
                         "  - {{name: l1, shape: [100, 400], params: 40100, forward_flops: {}}}\n"
                         "  - {{name: l2, shape: [1000], forward_flops: {}}}\n",
                         forward[0], forward[1], forward[2]));
  const auto out = run(dir, "ring",
                       fmt::format(R"(seed: 5
ranks: 4
steps: 3
platform: {{topology: cluster, hosts: 4, bandwidth: 10Gbps, latency: 1us, speed: 1Gf}}
network: alpha_beta
compute: {{reduce_speed: 0}}
model: {{layers: {}, batch: 2}}
algorithm: {{name: ring_allreduce, granularity: layer, bucket: 0B}}
)",
                                   (dir / "three.yaml").string()));
  // The premise: each hidden call is shorter than the backward pass that follows it.
  REQUIRE(cost(params[2]) < 2 * forward[1] * batch / speed);
  REQUIRE(cost(params[1]) < 2 * forward[0] * batch / speed);
  const auto summary = nlohmann::json::parse(read_file(out / "summary.json"));
  double hidden_sum = 0;
  for (const auto& row : steps_of(out)) {
    INFO("step " << row.at("step"));
    CHECK(row.at("hidden_comm_time_s") == Approx(cost(params[2]) + cost(params[1])).epsilon(1e-9));
    CHECK(row.at("exposed_comm_time_s") == Approx(cost(params[0])).epsilon(1e-9));
    // The window from the first call to the end of the backward pass (what was hatched before) is
    // the two layers' backward passes: far more than the calls in it.
    CHECK(row.at("comm_time_s") - row.at("exposed_comm_time_s") ==
          Approx(2 * (forward[1] + forward[0]) * batch / speed).epsilon(1e-9));
    hidden_sum += row.at("hidden_comm_time_s");
  }
  CHECK(summary["hidden_comm_time_s"].get<double>() == Approx(hidden_sum / 3).epsilon(1e-12));
  fs::remove_all(dir);
}

TEST_CASE(
    "NCCL's short DDP calls hide entirely: hidden + exposed is the calls' time with no compute to hide "
    "behind",
    "[hidden][nccl]") {
  // ResNet-50 in 25 MB buckets on one 8-GPU NVLink node: NCCL's calls take ~0.2 ms, the backward pass
  // of a bucket ~1 ms. With hosts a billion times faster nothing can hide: the calls run back to back
  // and the exposed time is their time. Reductions are free, so the calls cost the same in both runs.
  const auto dir = fresh_dir("hidden_nccl");
  const std::string scenario = R"(name: ddp
ranks: 8
steps: 2
platform: {topology: cluster, nodes: 1, gpus_per_node: 8, intra_bandwidth: 300GBps, bandwidth: 100Gbps, latency: 1us, speed: 100Tf}
compute: {reduce_speed: 0}
model: {layers: resnet50, math: off}
algorithm: {name: nccl_allreduce, granularity: layer, bucket: 25MB}
)";
  const auto slow = steps_of(run(dir, "slow", scenario));
  const auto fast = steps_of(run(dir, "fast", scenario, {"platform.speed=100000000Pf"}));
  REQUIRE(slow.size() == 2);
  for (std::size_t s = 0; s < slow.size(); ++s) {
    INFO("step " << s);
    const double calls = fast[s].at("exposed_comm_time_s") + fast[s].at("hidden_comm_time_s");
    CHECK(fast[s].at("hidden_comm_time_s") < 1e-6 * calls);
    CHECK(slow[s].at("hidden_comm_time_s") + slow[s].at("exposed_comm_time_s") ==
          Approx(calls).epsilon(1e-9));
    // Three of the four buckets' calls ran during the backward pass, the last one after it.
    CHECK(slow[s].at("hidden_comm_time_s") > 2 * slow[s].at("exposed_comm_time_s"));
    CHECK(slow[s].at("hidden_comm_time_s") <= slow[s].at("compute_time_s"));
    // The window from the first call to the end of the compute is several times the calls in it.
    CHECK(slow[s].at("comm_time_s") - slow[s].at("exposed_comm_time_s") >
          5 * slow[s].at("hidden_comm_time_s"));
  }
  fs::remove_all(dir);
}
