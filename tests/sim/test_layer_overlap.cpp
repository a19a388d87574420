// By-layer aggregation, two schedules: PyTorch DDP's buckets overlapping the backward pass
// (algorithm.overlap: true, the default) and mlbench's one blocking all-reduce per tensor after the
// backward pass (overlap: false). Timed under alpha_beta against the ring's closed form on a small
// hand-written layer table.
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sim/workload/compute_model.hpp"
#include "support/cli.hpp"
#include "support/csv.hpp"
#include "support/refusal.hpp"
#include "support/scenarios.hpp"

using namespace aggsim;
using namespace aggsim::test;
namespace fs = std::filesystem;

namespace {

constexpr int kP = 4;
constexpr double kAlpha = 2e-6;     // two 1 us links between hosts
constexpr double kBeta = 10e9 / 8;  // 10 Gb/s in bytes per second
constexpr double kSpeed = 1e9;      // 1Gf hosts
constexpr double kBatch = 2;

// Ring all-reduce of `bytes` over p ranks: 2(p-1)(alpha + bytes/(p beta)).
double ring_cost(double bytes) {
  return 2.0 * (kP - 1) * (kAlpha + bytes / kP / kBeta);
}

// Three layers, five tensors in model.parameters() order (every size a multiple of p, so the
// ring's chunks are equal): l0.weight 400x250, l0.bias 400, l1.weight 100x400, l1.bias 100, and
// l2 a 1-D scale of 1000.
const std::vector<double> kTensorElements = {100000, 400, 40000, 100, 1000};
const std::vector<double> kForwardFlops = {2e5, 8e4, 1e3};  // per sample

std::string layer_table(const fs::path& dir) {
  const auto path = dir / "three.yaml";
  write_file(path, fmt::format("name: three\nlayers:\n"
                               "  - {{name: l0, shape: [400, 250], params: 100400, forward_flops: {}}}\n"
                               "  - {{name: l1, shape: [100, 400], params: 40100, forward_flops: {}}}\n"
                               "  - {{name: l2, shape: [1000], forward_flops: {}}}\n",
                               kForwardFlops[0], kForwardFlops[1], kForwardFlops[2]));
  return path.string();
}

std::string scenario(const std::string& table, const std::string& algorithm, const std::string& rest = "") {
  return fmt::format(R"(seed: 5
ranks: {p}
steps: 3
platform: {{topology: cluster, hosts: {p}, bandwidth: 10Gbps, latency: 1us, speed: 1Gf}}
network: alpha_beta
compute: {{reduce_speed: 0}}
model: {{layers: {table}, batch: 2}}
algorithm: {{name: ring_allreduce, {algorithm}}}
{rest}
)",
                     fmt::arg("p", kP), fmt::arg("table", table), fmt::arg("algorithm", algorithm),
                     fmt::arg("rest", rest));
}

struct Run {
  std::vector<std::map<std::string, std::string>> rows;
  std::string resolved;
};

Run run(const fs::path& dir, const std::string& name, const std::string& yaml) {
  write_file(dir / (name + ".yaml"), yaml);
  const auto r = run_aggsim({"run", (dir / (name + ".yaml")).string(), "--out", (dir / name).string(), "-q"});
  REQUIRE(r.exit_code == 0);
  Run out;
  out.resolved = read_file(dir / name / "resolved.yaml");
  const auto cells = parse_csv(read_file(dir / name / "steps.csv"));
  for (std::size_t i = 1; i < cells.size(); ++i) {
    std::map<std::string, std::string> row;
    for (std::size_t c = 0; c < cells[0].size(); ++c) row[cells[0][c]] = cells[i].at(c);
    out.rows.push_back(row);
  }
  return out;
}

double column(const Run& r, std::size_t step, const std::string& name) {
  return std::stod(r.rows.at(step).at(name));
}

}  // namespace

TEST_CASE("overlap false: forward, backward, then one ring all-reduce per tensor", "[overlap][timing]") {
  // mlbench: for param in model.parameters(): all_reduce(param.grad), after loss.backward(). Under
  // alpha_beta the step is F + B + sum over tensors of 2(p-1)(alpha + 4 n_t / (p beta)), the
  // backward pass twice the forward; each tensor is 2(p-1) messages from every rank.
  const auto dir = fresh_dir("overlap_false");
  const std::string table = layer_table(dir);
  double F = 0, comm = 0, bytes = 0;
  for (double f : kForwardFlops) F += f * kBatch / kSpeed;
  for (double n : kTensorElements) comm += ring_cost(4 * n), bytes += 2 * (kP - 1) * 4 * n;
  const Run mlbench = run(dir, "mlbench", scenario(table, "granularity: layer, overlap: false"));
  REQUIRE(mlbench.rows.size() == 3);
  for (std::size_t s = 0; s < 3; ++s) {
    INFO("step " << s);
    CHECK(column(mlbench, s, "step_time_s") == Approx(F + 2 * F + comm).epsilon(1e-9));
    CHECK(column(mlbench, s, "compute_time_s") == Approx(3 * F).epsilon(1e-9));
    CHECK(column(mlbench, s, "comm_time_s") == Approx(comm).epsilon(1e-9));
    CHECK(column(mlbench, s, "exposed_comm_time_s") == Approx(comm).epsilon(1e-9));  // nothing hidden
    CHECK(column(mlbench, s, "messages") == kTensorElements.size() * 2 * (kP - 1) * kP);
    CHECK(column(mlbench, s, "bytes_sent") == bytes);
  }
  // resolved.yaml names the schedule, leaves out the bucket it does not use, and runs again as is.
  CHECK(mlbench.resolved.find("overlap: false") != std::string::npos);
  CHECK(mlbench.resolved.find("bucket:") == std::string::npos);
  write_file(dir / "again.yaml", mlbench.resolved);
  const auto again =
      run_aggsim({"run", (dir / "again.yaml").string(), "--out", (dir / "again").string(), "-q"});
  CHECK(again.exit_code == 0);
  CHECK(read_file(dir / "again" / "steps.csv") == read_file(dir / "mlbench" / "steps.csv"));

  // One tensor per bucket is not one layer per bucket: DDP with 0B buckets sends a layer's weight
  // and bias together (3 all-reduces), overlapped with the backward pass, and is faster.
  const Run ddp = run(dir, "ddp", scenario(table, "granularity: layer, bucket: 0B"));
  const Run ddp_default = run(dir, "ddp_default", scenario(table, "granularity: layer, overlap: true"));
  for (std::size_t s = 0; s < 3; ++s) {
    CHECK(column(ddp, s, "messages") == 3 * 2 * (kP - 1) * kP);
    CHECK(column(ddp, s, "step_time_s") < column(mlbench, s, "step_time_s"));
    // The default 25 MB bucket holds the whole 0.57 MB model: compute, then one all-reduce.
    CHECK(column(ddp_default, s, "step_time_s") ==
          Approx(3 * F + ring_cost(bytes / (2 * (kP - 1)))).epsilon(1e-9));
    CHECK(column(ddp_default, s, "step_time_s") < column(mlbench, s, "step_time_s"));
  }
  CHECK(ddp_default.resolved.find("overlap: true") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("overlap false aggregates the same numbers as granularity model", "[overlap][math]") {
  // An all-reduce is an all-reduce: per tensor or whole, every rank ends with the average (agg_error
  // at float rounding, rank_spread 0), and training follows the same losses.
  const auto dir = fresh_dir("overlap_math");
  const std::string table = layer_table(dir);
  const std::string workload = "workload: {problem: mlp, dim: 8, hidden: 6, classes: 3, eval_every: 1}";
  const Run per_tensor = run(dir, "tensor", scenario(table, "granularity: layer, overlap: false"));
  for (const auto& row : per_tensor.rows) {
    CHECK(std::stod(row.at("agg_error")) < 1e-6);
    CHECK(std::stod(row.at("rank_spread")) == 0);
  }
  const Run trained = run(dir, "trained", scenario(table, "granularity: layer, overlap: false", workload));
  const Run whole = run(dir, "whole", scenario(table, "granularity: model", workload));
  for (std::size_t s = 0; s < 3; ++s)
    CHECK(column(trained, s, "loss") == Approx(column(whole, s, "loss")).epsilon(1e-6));
  fs::remove_all(dir);
}

TEST_CASE("per-tensor plan: one bucket per weight matrix and per bias vector, in forward order",
          "[overlap][plan]") {
  // The table above by hand: pieces [400 x 250], [400], [100 x 400], [100], [1000]; the backward
  // pass of a layer is charged once; the proxy's tensors go to the buckets in forward order.
  std::vector<LayerSpec> layers(3);
  layers[0] = {};
  layers[0].name = "l0", layers[0].rows = 400, layers[0].cols = 250, layers[0].params = 100400;
  layers[1].name = "l1", layers[1].rows = 100, layers[1].cols = 400, layers[1].params = 40100;
  layers[2].name = "l2", layers[2].rows = 1000, layers[2].cols = 1, layers[2].params = 1000;
  for (std::size_t i = 0; i < 3; ++i) layers[i].backward_flops = 10.0 * (i + 1);
  const std::vector<TensorInfo> proxy = {{"a", {3, 2}, 0}, {"b", {3, 1}, 6}, {"c", {4, 3}, 9}};
  const StepPlan plan = make_step_plan(layers, Bucketing::per_tensor, 0, proxy, 21);
  CHECK_FALSE(plan.overlap);
  REQUIRE(plan.buckets.size() == 5);
  const std::vector<std::pair<std::int64_t, std::int64_t>> shapes = {
      {400, 250}, {400, 1}, {100, 400}, {100, 1}, {1000, 1}};
  const std::vector<double> backward = {10, 0, 20, 0, 30};
  for (std::size_t b = 0; b < 5; ++b) {
    INFO("bucket " << b);
    REQUIRE(plan.buckets[b].wire_shape.pieces.size() == 1);
    CHECK(plan.buckets[b].wire_shape.pieces[0].shape.rows == shapes[b].first);
    CHECK(plan.buckets[b].wire_shape.pieces[0].shape.cols == shapes[b].second);
    CHECK(plan.buckets[b].wire_elements == static_cast<std::uint64_t>(shapes[b].first * shapes[b].second));
    CHECK(plan.buckets[b].backward_flops == backward[b]);
  }
  // Proxy tensor j of 3 to bucket floor(5 j / 3): a -> 0, b -> 1, c -> 3, each keeping its shape.
  CHECK(plan.buckets[0].proxy.begin == 0);
  CHECK(plan.buckets[0].proxy.count == 6);
  CHECK(plan.buckets[0].proxy_shape.rows == 3);
  CHECK(plan.buckets[1].proxy.begin == 6);
  CHECK(plan.buckets[1].proxy.count == 3);
  CHECK(plan.buckets[2].proxy.count == 0);
  CHECK(plan.buckets[3].proxy.begin == 9);
  CHECK(plan.buckets[3].proxy.count == 12);
  CHECK(plan.buckets[3].proxy_shape.cols == 3);
  CHECK(plan.buckets[4].proxy.count == 0);
}

TEST_CASE("bad algorithm.overlap uses are input errors at the key", "[overlap][bad_input]") {
  // kSmallScenario ends with `  name: ring_allreduce` on line 12; the keys below follow it.
  struct Case {
    std::string keys, expected;
  };
  const std::vector<Case> cases = {
      {"  overlap: false\n", "bad.yaml:13:12: algorithm.overlap: false is only used with granularity: layer"},
      {"  granularity: layer\n  overlap: false\n  bucket: 1MB\n",
       "bad.yaml:15:11: algorithm.bucket: not used with overlap: false"},
      {"  granularity: layer\n  overlap: sometimes\n", "bad.yaml:14:12: algorithm.overlap:"},
  };
  for (const auto& c : cases) check_refused(std::string(kSmallScenario) + c.keys, {c.expected});
  // overlap: true with an explicit bucket is DDP as before.
  const auto dir = fresh_dir("good_overlap");
  write_file(dir / "ok.yaml",
             std::string(kSmallScenario) + "  granularity: layer\n  overlap: true\n  bucket: 1MB\n");
  CHECK(run_aggsim({"validate", "ok.yaml"}, dir).exit_code == 0);
  fs::remove_all(dir);
}
