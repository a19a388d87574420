// Sharded data parallelism (`fsdp`): training reaches DDP's weights, each step sends the closed-form
// bytes of its sharding, gathers hide behind compute as the schedule says, the memory figures follow
// ZeRO's published accounting, and bad input is refused at its key.
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "algorithms/sharded/fsdp_memory.hpp"
#include "fsdp_fixture.hpp"
#include "sim/api/wire_dtype.hpp"
#include "support/refusal.hpp"

using namespace aggsim;
using namespace aggsim::test;
using namespace aggsim::test::fsdp;

namespace {

// Each rank's bytes in step 0 of two on 8 ranks equal its sharding's closed form, for `algorithm`
// with each variant's extra algorithm keys and model keys; with bf16 parameters the gathers' half.
void check_step_bytes(const std::string& algorithm, const std::vector<std::pair<std::string, std::string>>& variants) {
  const double M = kModelElements * 4;  // fp32 bytes
  const int n = 8, g = 4, r = 2;
  const std::map<std::string, double> expected = {
      {"full", 3.0 * (n - 1) / n * M},
      {"grad_op", 2.0 * (n - 1) / n * M},
      {"optimizer", 2.0 * (n - 1) / n * M},
      {"hybrid", 3.0 * (g - 1) / g * M + 2.0 * (r - 1) / r * (M / g)},
  };
  const auto bytes_of = [&](const std::string& keys, const std::string& model) {
    const Traffic t = traffic(scenario(n, 2, algorithm + keys,
                                       fmt::format("model: {{layers: {}, proxy_dim: 96, {}}}", layer_table(), model)));
    REQUIRE(t.bytes.size() == static_cast<std::size_t>(n));
    return t.bytes;
  };
  for (const auto& [keys, model] : variants) {
    for (const auto& [sharding, bytes] : expected) {
      INFO("sharding " << sharding << keys << ", " << model);
      const std::string extra = sharding == "hybrid" ? ", shard_group: 4" : "";
      for (double b : bytes_of(keys + ", sharding: " + sharding + extra, model)) CHECK(b == bytes);
    }
    // Mixed precision: gathers carry bf16 parameters, reduce-scatters fp32 gradients.
    for (double b : bytes_of(keys + ", param_dtype: bf16", model))
      CHECK(b == 2.0 * (n - 1) / n * (M / 2) + 1.0 * (n - 1) / n * M);
  }
}

}  // namespace

TEST_CASE("fsdp trains the MLP to DDP's weights and losses under every sharding", "[fsdp][math]") {
  // DDP: the same ring, one bucket per layer as fsdp's default units. The ring's reduce-scatter and
  // the gather of the updated shards are its all-reduce's two halves, and SGD is element-wise, so
  // full, grad_op and optimizer give DDP's bits. Hybrid sums each element in another order (two
  // rings of 2 instead of one of 4): its weights stay within float rounding of DDP's, bounded by
  // 4 steps x 4 ranks x 2^-23 relative to the weights' scale.
  const Trained ddp = train(mlp_scenario(4, "name: ring_allreduce, granularity: layer, bucket: 0B"));
  REQUIRE(ddp.weights.size() == 4);
  REQUIRE(ddp.losses.size() >= 4);
  for (const std::string& sharding : kShardings) {
    INFO("sharding " << sharding);
    const std::string extra = sharding == "hybrid" ? ", shard_group: 2" : "";
    check_as_ddp(train(mlp_scenario(4, "name: fsdp, sharding: " + sharding + extra)), ddp, sharding);
  }
}

TEST_CASE("fsdp's per-rank bytes of a step equal its sharding's closed form", "[fsdp][formula]") {
  // Ring collectives send (n-1)/n of what they cover: full gathers twice and reduce-scatters once,
  // grad_op and optimizer gather once, hybrid does full inside groups of g and all-reduces a 1/g
  // shard across the r groups. Step 0 of two (the last step also gathers the final weights).
  check_step_bytes("name: fsdp", {{"", "math: on"}, {"", "math: off"}});
}

TEST_CASE("fsdp's prefetch hides each unit's gather behind the previous unit's compute", "[fsdp][formula]") {
  // Three units of E = 640, 1280, 1920 elements, each gathered or reduce-scattered by a ring of
  // (n-1)(alpha + 4E/(n beta)). With compute far longer than any collective, full sharding with
  // prefetch exposes only the first gather of each pass and the last reduce-scatter; without it,
  // every gather of the forward and backward passes is exposed.
  const int n = 4;
  const double flops = 2e6;                              // per sample, forward; backward twice that
  const double forward = 3 * flops / 1e9, backward = 2 * forward;  // batch 1 on 1 Gf hosts
  const auto ring = [&](double elements) { return (n - 1) * (kAlpha + 4 * elements / n / kBeta); };
  const std::string model = fmt::format("model: {{layers: {}, batch: 1, proxy_dim: 96}}", layer_table(flops));
  // Forward order a, b, c; backward c, b, a; the last reduce-scatter is a's.
  const double prefetched = ring(640) + forward + ring(1920) + backward + ring(640);
  const double serial = ring(640) + ring(1280) + ring(1920) + forward + ring(1920) + ring(1280) + ring(640) +
                        backward + ring(640);
  const Traffic with = traffic(scenario(n, 2, "name: fsdp", model));
  const Traffic without = traffic(scenario(n, 2, "name: fsdp, prefetch: false", model));
  CHECK(with.step_times.at(0) == Approx(prefetched).epsilon(1e-9));
  CHECK(without.step_times.at(0) == Approx(serial).epsilon(1e-9));
  // The breakdown's exposed gathers: each pass's first gather, or every gather.
  CHECK(with.exposed_gathers.at(0) == Approx(ring(640) + ring(1920)).epsilon(1e-9));
  CHECK(without.exposed_gathers.at(0) == Approx(2 * (ring(640) + ring(1280) + ring(1920))).epsilon(1e-9));
}

TEST_CASE("fsdp's memory per rank follows ZeRO's published accounting", "[fsdp][memory]") {
  // Rajbhandari et al. 2020, figure 1: 7.5 B parameters, 64 GPUs, 16-bit parameters and gradients,
  // K = 12: 120 GB unsharded, 31.4 GB with optimizer states sharded (ZeRO-1), 16.6 GB with gradients
  // too (ZeRO-2), 1.9 GB with parameters too (ZeRO-3).
  FsdpMemoryInput in;
  in.shard_group = 64;
  in.param_bytes = in.grad_bytes = 2;
  in.unit_elements = {2'500'000'000, 2'500'000'000, 2'500'000'000};
  const auto total = [](const FsdpMemory& m) {
    return (m.param_bytes_per_rank + m.grad_bytes_per_rank + m.optimizer_bytes_per_rank) / 1e9;
  };
  in.sharding = FsdpSharding::optimizer;
  CHECK(total(fsdp_memory(in)) == Approx(31.4).margin(0.05));
  in.sharding = FsdpSharding::full;
  const FsdpMemory full = fsdp_memory(in);
  CHECK(total(full) == Approx(1.9).margin(0.05));
  // ZeRO-2 keeps whole parameters (15 GB) beside its sharded gradients and optimizer state; FSDP's
  // SHARD_GRAD_OP shards them between steps but holds them whole from forward to backward.
  in.sharding = FsdpSharding::grad_op;
  const FsdpMemory grad_op = fsdp_memory(in);
  CHECK((grad_op.peak_gathered_bytes + grad_op.grad_bytes_per_rank + grad_op.optimizer_bytes_per_rank) / 1e9 ==
        Approx(16.6).margin(0.05));
  // With prefetch two neighbouring units are whole at once; without, one.
  CHECK(full.peak_gathered_bytes == 2 * 2.5e9 * 2);
  in.sharding = FsdpSharding::full;
  in.prefetch = false;
  CHECK(fsdp_memory(in).peak_gathered_bytes == 2.5e9 * 2);
}

TEST_CASE("fsdp refuses impossible sharding at the key", "[fsdp][input]") {
  const std::string model = "model: {size: 1MB}";
  check_refused(scenario(8, 1, "name: fsdp, sharding: hybrid, shard_group: 3", model),
                {"algorithm.shard_group", "does not divide the 8 ranks"});
  check_refused(scenario(8, 1, "name: fsdp, sharding: hybrid, shard_group: 8", model),
                {"algorithm.shard_group", "at least two groups"});
  // On a flat cluster a node holds one rank: hybrid's default groups of a node's GPUs are singletons,
  // which is fine; on one 8-GPU node they are the whole world.
  check_refused(R"(
ranks: 8
steps: 1
platform: {topology: cluster, nodes: 1, gpus_per_node: 8, bandwidth: 100Gbps, latency: 1us}
model: {size: 1MB}
algorithm: {name: fsdp, sharding: hybrid}
)",
                {"sharding", "at least two groups"});
  check_refused(scenario(8, 1, "name: fsdp, sharding: full, shard_group: 4", model),
                {"algorithm.shard_group", "hybrid only"});
  check_refused(scenario(8, 1, "name: fsdp, every: 2", model), {"algorithm.every"});
  check_refused(scenario(8, 1, "name: fsdp, granularity: layer, bucket: 1MB", model), {"algorithm.bucket", "unit"});
  check_refused(scenario(8, 1, "name: fsdp, apply_to: weights", model), {"algorithm.apply_to"});
}

TEST_CASE("fsdp's collectives.csv has a row per gather and reduce-scatter of each unit", "[fsdp][outputs]") {
  // Full sharding on 4 ranks, three units (layers a, b, c): per step three reduce-scatters and six
  // gathers; the last step gathers every unit once more. Their bytes and the steps' agree.
  const auto dir = fresh_dir("fsdp-outputs");
  write_file(dir / "s.yaml", scenario(4, 2, "name: fsdp", fmt::format("model: {{layers: {}, proxy_dim: 96}}", layer_table())));
  const auto r = run_aggsim({"run", "s.yaml", "--out", "out", "-q"}, dir);
  REQUIRE(r.exit_code == 0);
  const std::string csv = read_file(dir / "out" / "collectives.csv");
  std::istringstream lines(csv);
  std::string header;
  std::getline(lines, header);
  REQUIRE(header.rfind("step,bucket,rank_group,collective,", 0) == 0);
  REQUIRE(header.size() > 5);
  REQUIRE(header.substr(header.size() - 5) == ",unit");
  std::map<std::string, int> rows;  // "step collective unit" -> rows
  double wire = 0;
  for (std::string line; std::getline(lines, line);) {
    std::vector<std::string> cells;
    std::istringstream cell_stream(line);
    for (std::string c; std::getline(cell_stream, c, ',');) cells.push_back(c);
    REQUIRE(cells.size() > 10);
    ++rows[cells[0] + " " + cells[3] + " " + cells.back()];
    if (cells[0] == "0") wire += std::stod(cells[9]);
  }
  for (const std::string unit : {"0-0", "1-1", "2-2"}) {
    CHECK(rows["0 reduce_scatter " + unit] == 1);
    CHECK(rows["0 all_gather " + unit] == 2);
    CHECK(rows["1 reduce_scatter " + unit] == 1);
    CHECK(rows["1 all_gather " + unit] == 3);
  }
  CHECK(rows.size() == 12);
  // Each call's wire_bytes is its whole unit (nccl-tests' size): three passes over the model.
  CHECK(wire == 3 * kModelElements * 4);
  const std::string summary = read_file(dir / "out" / "summary.json");
  CHECK(summary.find(fmt::format("\"param_bytes_per_rank\": {}", kModelElements * 4 / 4)) != std::string::npos);
  CHECK(summary.find("\"optimizer_bytes_per_rank\": 7680") != std::string::npos);  // 8 B x 3840 / 4
  CHECK(summary.find("\"exposed_gather_time_s\"") != std::string::npos);
}

TEST_CASE("fsdp over NCCL trains the MLP to DDP's losses, the same bits at flow and chunk level", "[fsdp][nccl][math]") {
  // NCCL's ring adds each shard's inputs from the member after its owner round to the owner, where
  // the message ring's all-reduce starts elsewhere: the sums differ in order only. With 4 ranks
  // avg's float(1/4) is exact, so each step's gradient is within 4 x 2^-24 of the ring's relative to
  // its terms; over 4 steps the weights stay within 4 steps x 4 ranks x 2^-23 of DDP's relative to
  // their scale, and the losses within 1e-5. Flow and chunk movement compute one order: equal bits.
  const Trained ddp = train(mlp_scenario(4, "name: ring_allreduce, granularity: layer, bucket: 0B"));
  REQUIRE(ddp.weights.size() == 4);
  for (const std::string& sharding : kShardings) {
    INFO("sharding " << sharding);
    const std::string extra = sharding == "hybrid" ? ", shard_group: 2" : "";
    const std::string fsdp = "name: fsdp, collectives: nccl, sharding: " + sharding + extra;
    const Trained flow = train(mlp_scenario(4, fsdp));
    const Trained chunk = train(mlp_scenario(4, fsdp + ", movement: chunk"));
    REQUIRE(flow.weights.size() == ddp.weights.size());
    CHECK(chunk.weights == flow.weights);
    CHECK(chunk.losses == flow.losses);
    const auto [largest, scale] = weight_gap(flow, ddp);
    CHECK(largest <= 4 * 4 * std::ldexp(1.0, -23) * scale);
    REQUIRE(flow.losses.size() == ddp.losses.size());
    for (std::size_t i = 0; i < ddp.losses.size(); ++i) CHECK(flow.losses[i] == Approx(ddp.losses[i]).epsilon(1e-5));
    // Every rank holds the same whole weights after each step.
    for (const auto& [step, ranks] : flow.weights)
      for (const auto& w : ranks) CHECK(w == ranks.front());
  }
}

TEST_CASE("fsdp over NCCL sends its sharding's closed-form bytes at both movements", "[fsdp][nccl][formula]") {
  // NCCL's ring reduce-scatter and all-gather send (n-1)/n of what they cover, as the message ring:
  // the closed forms of the ring test above, with the Simple protocol (all bytes on the wire are
  // data). Hybrid's 1/g shard is all-reduced by NCCL across r = 2 groups: 2(r-1)/r of it by ring or
  // tree alike.
  check_step_bytes("name: fsdp, collectives: nccl, protocol: simple",
                   {{", movement: flow", "math: on"}, {", movement: chunk", "math: on"}});
}

TEST_CASE("fsdp refuses NCCL's keys on the message ring, at the key", "[fsdp][nccl][input]") {
  const std::string model = "model: {size: 1MB}";
  check_refused(scenario(8, 1, "name: fsdp, protocol: ll", model), {"algorithm.protocol", "collectives: nccl"});
  check_refused(scenario(8, 1, "name: fsdp, movement: chunk", model), {"algorithm.movement", "collectives: nccl"});
  check_refused(scenario(8, 1, "name: fsdp, collectives: mpi", model), {"algorithm.collectives"});
}

TEST_CASE("fsdp over NCCL names NCCL's choice on every call of collectives.csv", "[fsdp][nccl][outputs]") {
  const CollectivesCsv csv = run_collectives_csv(
      scenario(8, 1, "name: fsdp, collectives: nccl, sharding: hybrid, shard_group: 4",
               fmt::format("model: {{layers: {}, proxy_dim: 96}}", layer_table())),
      "fsdp-nccl-outputs");
  REQUIRE(csv.header.rfind("step,bucket,rank_group,collective,algorithm,nccl_algorithm,protocol,channels,", 0) == 0);
  for (const auto& row : csv.rows) {
    REQUIRE(row.size() > 8);
    INFO(row.at("step") << " " << row.at("collective") << " " << row.at("unit"));
    CHECK(row.at("nccl_algorithm") == "ring");  // one GPU a node: NCCL's ring for reduce-scatter and all-gather
    CHECK(!row.at("protocol").empty());
    CHECK(std::stoi(row.at("channels")) >= 1);
  }
  CHECK(csv.rows.size() == 3 * 4);  // three units: a reduce-scatter, two gathers and the last step's gather each
}

TEST_CASE("fsdp over NCCL in bf16 sends and reduces bf16 values, the same bits at flow and chunk level",
          "[fsdp][nccl][math]") {
  // Mixed precision: gradients reduce-scattered in bf16 (every partial sum rounded), parameters
  // gathered in bf16, each rank's own shard kept in fp32. So after a step most of a rank's weights
  // (the 3 of 4 shards it gathered) are bf16 values, where fp32 training leaves almost none; the
  // losses stay near fp32's (bf16 keeps 8 significant bits: 1e-2).
  const std::string mixed = "name: fsdp, collectives: nccl, param_dtype: bf16, reduce_dtype: bf16";
  const Trained flow = train(mlp_scenario(4, mixed));
  const Trained chunk = train(mlp_scenario(4, mixed + ", movement: chunk"));
  const Trained fp32 = train(mlp_scenario(4, "name: fsdp, collectives: nccl"));
  CHECK(chunk.weights == flow.weights);
  CHECK(chunk.losses == flow.losses);
  const auto bf16_share = [](const Trained& t) {
    double exact = 0, all = 0;
    for (const auto& [step, ranks] : t.weights)
      for (const auto& w : ranks)
        for (float v : w) {
          Eigen::VectorXf one = Eigen::VectorXf::Constant(1, v);
          round_to(one, WireDtype::bf16);
          exact += one[0] == v;
          ++all;
        }
    return exact / all;
  };
  INFO("bf16 share: mixed " << bf16_share(flow) << ", fp32 " << bf16_share(fp32));
  CHECK(bf16_share(flow) >= 0.6);
  CHECK(bf16_share(fp32) <= 0.2);
  REQUIRE(flow.losses.size() == fp32.losses.size());
  for (std::size_t i = 0; i < fp32.losses.size(); ++i) CHECK(flow.losses[i] == Approx(fp32.losses[i]).epsilon(1e-2));
  CHECK(flow.weights != fp32.weights);
}

TEST_CASE("fsdp under a parallel layout trains the MLP to DDP's weights under the same layout", "[fsdp][parallel][math]") {
  // Each data-parallel group of D = 4 reduce-scatters and gathers the shards of its slice of the
  // model; the replica's ranks take the other slices from their owners' updated shards. DDP under
  // the same layout all-reduces each slice with the same ring, one bucket per layer of the slice, and
  // assembles the slices: the same sums in the same order, so full, grad_op and optimizer give DDP's
  // bits, and hybrid (two rings of 2) stays within 4 steps x 4 ranks x 2^-23 of the weights' scale,
  // as without a layout. Every rank holds the model's whole weights after each step.
  for (const std::string parallel : {"parallel: {tensor: 2}", "parallel: {pipeline: 2}"}) {
    const Trained ddp = train(mlp_scenario(8, "name: ring_allreduce, granularity: layer, bucket: 0B", parallel));
    REQUIRE(ddp.weights.size() == 4);
    for (const std::string& sharding : kShardings) {
      INFO(parallel << ", sharding " << sharding);
      const std::string extra = sharding == "hybrid" ? ", shard_group: 2" : "";
      const Trained fsdp = train(mlp_scenario(8, "name: fsdp, sharding: " + sharding + extra, parallel));
      check_as_ddp(fsdp, ddp, sharding);
      for (const auto& [step, ranks] : fsdp.weights)
        for (const auto& w : ranks) CHECK(w == ranks.front());
    }
  }
  // The slices change hands in-process: the math plane leaves the timing of the run without it.
  const std::string parallel = "parallel: {tensor: 2}";
  const Traffic on = traffic(mlp_scenario(8, "name: fsdp", parallel));
  const Traffic off = traffic(scenario(8, 4, "name: fsdp", fmt::format("model: {{layers: {}, math: off}}\n{}", layer_table(), parallel)));
  REQUIRE(on.step_times.size() == 4);
  CHECK(on.step_times == off.step_times);
  CHECK(on.bytes == off.bytes);
}

TEST_CASE("fsdp over NCCL and with a compressor under a parallel layout keeps its bounds from DDP", "[fsdp][parallel][nccl][math]") {
  // As without a layout: fsdp with fp16 over the message ring gives the bits of DDP with fp16 under
  // the same layout; over NCCL the sums run in NCCL's order, within 4 steps x 4 ranks x 2^-23 of
  // the weights' scale, flow and chunk movement with the same bits.
  const std::string parallel = "parallel: {tensor: 2}", fp16 = "compression: {name: fp16}\n" + parallel;
  const std::string ddp = "name: ring_allreduce, granularity: layer, bucket: 0B";
  for (const std::string& extra : {parallel, fp16}) {
    INFO(extra);
    const Trained reference = train(mlp_scenario(8, ddp, extra));
    REQUIRE(reference.weights.size() == 4);
    if (extra == fp16) CHECK(weight_gap(train(mlp_scenario(8, "name: fsdp", extra)), reference).first == 0.0);
    const Trained flow = train(mlp_scenario(8, "name: fsdp, collectives: nccl", extra));
    const Trained chunk = train(mlp_scenario(8, "name: fsdp, collectives: nccl, movement: chunk", extra));
    CHECK(chunk.weights == flow.weights);
    const auto [largest, scale] = weight_gap(flow, reference);
    CHECK(largest <= 4 * 4 * std::ldexp(1.0, -23) * scale);
    // NCCL's order is not the ring's: the bound is not vacuous for fp32 gradients (fp16 values, 11
    // significant bits, add exactly in fp32 here whatever the order).
    if (extra == parallel) CHECK(largest > 0.0);
  }
}
