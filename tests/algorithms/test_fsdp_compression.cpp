// Compressors under fsdp: a summable compressor encodes each shard of a unit on every rank and the
// ring's reduce-scatter adds the encodings; fp16 gives DDP's bits with the same compressor, shared-seed
// random-k the unbiased sparse average shard by shard, every step sends the closed-form compressed
// bytes (collectives.csv agreeing), and compressors a reduce-scatter cannot carry are refused.
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "fsdp_fixture.hpp"
#include "support/refusal.hpp"
#include "support/simulate_capturing.hpp"

using namespace aggsim;
using namespace aggsim::test;
using namespace aggsim::test::fsdp;

namespace {

// Shared-seed random-k keeping half of each shard: what the ranks' reduced shards make together.
struct HalfKept {
  long kept = 0, size = 0, owned_twice = 0;
  double max_error = 0;  // of a kept value against 2 x the mean of the ranks' inputs there
};

HalfKept half_kept(const std::string& yaml) {
  const std::string text = run_isolated([&] {
    const Captured c = simulate_capturing(load_scenario_text(yaml, "test.yaml"));
    HalfKept h;
    for (const auto& [step, inputs] : c.before) {
      const auto& outputs = c.after.at(step);
      for (Eigen::Index i = 0; i < inputs[0].size(); ++i) {
        ++h.size;
        int owners = 0;
        double mean = 0;
        for (const auto& in : inputs) mean += in[i];
        mean /= static_cast<double>(inputs.size());
        for (const auto& out : outputs)
          if (out[i] != 0.0f) {
            ++owners;
            h.max_error = std::max(h.max_error, std::abs(out[i] - 2 * mean));
          }
        h.kept += owners;
        h.owned_twice += owners > 1;
      }
    }
    return fmt::format("{} {} {} {:.17g}", h.kept, h.size, h.owned_twice, h.max_error);
  });
  std::istringstream in(text);
  HalfKept h;
  if (!(in >> h.kept >> h.size >> h.owned_twice >> h.max_error))
    throw std::runtime_error("run failed: " + text);
  return h;
}

// Each reduce_scatter row's wire_bytes in step 0 of collectives.csv, by unit.
std::map<std::string, double> reduce_scatter_bytes(const std::string& yaml) {
  const CollectivesCsv csv = run_collectives_csv(yaml, "fsdp-compressed-outputs");
  REQUIRE(csv.header.find(",wire_bytes,") != std::string::npos);
  std::map<std::string, double> bytes;
  for (const auto& row : csv.rows) {
    REQUIRE(row.size() > 10);
    if (row.at("step") == "0" && row.at("collective") == "reduce_scatter")
      bytes[row.at("unit")] += std::stod(row.at("wire_bytes"));
  }
  return bytes;
}

}  // namespace

TEST_CASE("fsdp with fp16 compression trains the MLP to DDP's bits with fp16 compression",
          "[fsdp][compression][math]") {
  // fp16 rounds each value on its own, so encoding each shard apart is encoding the unit; the ring
  // adds the encodings in the ring all-reduce's order and the owner decodes its shard, as DDP's
  // compressed all-reduce with one bucket per layer does. Hybrid adds in another order (two rings of
  // 2): within 4 steps x 4 ranks x 2^-23 of the weights' scale, as uncompressed.
  const std::string compression = "compression: {name: fp16}";
  const Trained ddp =
      train(mlp_scenario(4, "name: ring_allreduce, granularity: layer, bucket: 0B", compression));
  const Trained dense = train(mlp_scenario(4, "name: ring_allreduce, granularity: layer, bucket: 0B"));
  REQUIRE(ddp.weights.size() == 4);
  CHECK(ddp.weights != dense.weights);  // fp16 changes the numbers
  for (const std::string& sharding : kShardings) {
    INFO("sharding " << sharding);
    const std::string extra = sharding == "hybrid" ? ", shard_group: 2" : "";
    check_as_ddp(train(mlp_scenario(4, "name: fsdp, sharding: " + sharding + extra, compression)), ddp, sharding);
  }
}

TEST_CASE("fsdp with shared-seed random-k keeps half of every shard, the unbiased average there",
          "[fsdp][compression][math]") {
  // ratio 1/2 on 4 ranks, one unit of 1000 values cut into shards of 250: every rank draws the same
  // 125 coordinates of each shard (the shared stream), the ring adds the kept values, and the owner
  // scales them by 250/125 = 2. So over all ranks' reduced shards exactly half the coordinates are
  // nonzero, each held by its one owner, each 2 x the mean of the ranks' inputs there.
  const HalfKept h = half_kept(scenario(4, 2, "name: fsdp",
                                        "model: {size: 4000B, proxy_dim: 1000}\n"
                                        "compression: {name: randomk, ratio: 0.5, shared_seed: true}"));
  CHECK(h.size == 2 * 1000);
  CHECK(h.kept == h.size / 2);
  CHECK(h.owned_twice == 0);
  CHECK(h.max_error <= 1e-5);
}

TEST_CASE("fsdp with a compressor sends the closed-form compressed bytes, collectives.csv agreeing",
          "[fsdp][compression][formula]") {
  // Gathers move fp32 parameters, reduce-scatters the encoding C of each unit's shards: full
  // 2(n-1)/n M + (n-1)/n C, grad_op and optimizer M's gather once, hybrid in groups of g with r
  // groups 2(g-1)/g M + (g-1)/g C + 2(r-1)/r C/g. fp16: C = M/2; shared-seed random-k at ratio 1/4:
  // 4 bytes a kept value, C = M/4 (every shard's pieces divide by 4 on 8 ranks).
  const double M = kModelElements * 4;
  const int n = 8, g = 4, r = 2;
  for (const auto& [compression, C] : {std::pair<std::string, double>{"name: fp16", M / 2},
                                       {"name: randomk, ratio: 0.25, shared_seed: true", M / 4}}) {
    const std::map<std::string, double> expected = {
        {"full", 2.0 * (n - 1) / n * M + 1.0 * (n - 1) / n * C},
        {"grad_op", 1.0 * (n - 1) / n * M + 1.0 * (n - 1) / n * C},
        {"optimizer", 1.0 * (n - 1) / n * M + 1.0 * (n - 1) / n * C},
        {"hybrid", 2.0 * (g - 1) / g * M + 1.0 * (g - 1) / g * C + 2.0 * (r - 1) / r * (C / g)},
    };
    for (const std::string math : {"on", "off"})
      for (const auto& [sharding, bytes] : expected) {
        INFO(compression << ", sharding " << sharding << ", math " << math);
        const std::string extra = sharding == "hybrid" ? ", shard_group: 4" : "";
        const Traffic t = traffic(scenario(n, 2, "name: fsdp, sharding: " + sharding + extra,
                                           fmt::format("model: {{layers: {}, proxy_dim: 96, math: {}}}\n"
                                                       "compression: {{{}}}",
                                                       layer_table(), math, compression)));
        REQUIRE(t.bytes.size() == static_cast<std::size_t>(n));
        for (double b : t.bytes) CHECK(b == bytes);
      }
    // collectives.csv: each unit's reduce-scatter carries its encoding (nccl-tests' size, the unit).
    const auto rows =
        reduce_scatter_bytes(scenario(n, 1, "name: fsdp",
                                      fmt::format("model: {{layers: {}, proxy_dim: 96}}\ncompression: {{{}}}",
                                                  layer_table(), compression)));
    const std::map<std::string, double> units = {
        {"0-0", 640 * 4 * C / M}, {"1-1", 1280 * 4 * C / M}, {"2-2", 1920 * 4 * C / M}};
    CHECK(rows == units);
  }
}

TEST_CASE("fsdp over NCCL carries summable compressors, the message ring's result within rounding, the same bits "
          "at flow and chunk level",
          "[fsdp][compression][nccl][math]") {
  // Each shard encoded apart as on the message ring, in equal slots; NCCL's reduce-scatter adds the
  // ranks' encodings of a shard, which are the ring's, in NCCL's ring order (from the member after
  // the owner round to it, with avg's float(1/4) = 1/4 applied as each input is read) where the
  // message ring starts elsewhere: the sums differ in order only. So the weights stay within 4 steps
  // x 4 ranks x 2^-23 of the ring's relative to their scale and the losses within 1e-5, as for dense
  // gradients (test_fsdp.cpp); flow and chunk movement compute one order: equal bits.
  for (const std::string compression : {"compression: {name: fp16}",
                                        "compression: {name: randomk, ratio: 0.5, shared_seed: true}"}) {
    for (const std::string& sharding : kShardings) {
      INFO(compression << ", sharding " << sharding);
      const std::string fsdp = "name: fsdp, sharding: " + sharding + (sharding == "hybrid" ? ", shard_group: 2" : "");
      const Trained ring = train(mlp_scenario(4, fsdp, compression));
      const Trained flow = train(mlp_scenario(4, fsdp + ", collectives: nccl", compression));
      const Trained chunk = train(mlp_scenario(4, fsdp + ", collectives: nccl, movement: chunk", compression));
      const Trained dense = train(mlp_scenario(4, fsdp + ", collectives: nccl"));
      REQUIRE(ring.weights.size() == 4);
      REQUIRE(flow.weights.size() == ring.weights.size());
      CHECK(chunk.weights == flow.weights);
      CHECK(chunk.losses == flow.losses);
      CHECK(flow.weights != dense.weights);  // the compressor is in the math
      const auto [largest, scale] = weight_gap(flow, ring);
      CHECK(largest <= 4 * 4 * std::ldexp(1.0, -23) * scale);
      REQUIRE(flow.losses.size() == ring.losses.size());
      for (std::size_t i = 0; i < ring.losses.size(); ++i) CHECK(flow.losses[i] == Approx(ring.losses[i]).epsilon(1e-5));
    }
  }
}

TEST_CASE("fsdp over NCCL sends the closed-form compressed bytes, padding unequal shards to the largest",
          "[fsdp][compression][nccl][formula]") {
  // With every shard's encoding of equal size, NCCL's ring (Simple: all bytes on the wire are data)
  // sends the message ring's closed forms (the test above): full 2(n-1)/n M + (n-1)/n C. fp16: C = M/2.
  const double M = kModelElements * 4, C = M / 2;
  const int n = 8;
  for (const std::string movement : {"flow", "chunk"}) {
    INFO("movement " << movement);
    const Traffic t = traffic(scenario(n, 2, "name: fsdp, collectives: nccl, protocol: simple, movement: " + movement,
                                       fmt::format("model: {{layers: {}, proxy_dim: 96}}\ncompression: {{name: fp16}}",
                                                   layer_table())));
    REQUIRE(t.bytes.size() == static_cast<std::size_t>(n));
    for (double b : t.bytes) CHECK(b == 2.0 * (n - 1) / n * M + 1.0 * (n - 1) / n * C);
  }
  // One unit of 1003 fp32 values on 4 ranks: shards of 251, 251, 251, 250 values, fp16 encodings of
  // 502, 502, 502, 500 bytes, carried as 126, 126, 126, 125 fp32 elements. Over all ranks a ring
  // reduce-scatter sends every chunk n-1 times: the message ring 3 x (3 x 126 + 125) x 4 bytes, NCCL,
  // each shard in a slot of 126 elements, 3 x 4 x 126 x 4; the gathers 3 x 1003 x 4 bytes either way.
  const std::string one_unit = "model: {size: 4012B, proxy_dim: 64, math: off}\ncompression: {name: fp16}";
  const auto total = [](const Traffic& t) {
    double sum = 0;
    for (double b : t.bytes) sum += b;
    return sum;
  };
  const double gathers = 3.0 * 4012;
  CHECK(total(traffic(scenario(4, 2, "name: fsdp, sharding: optimizer", one_unit))) ==
        gathers + 3 * (3 * 126 + 125) * 4);
  CHECK(total(traffic(scenario(4, 2, "name: fsdp, sharding: optimizer, collectives: nccl, protocol: simple",
                               one_unit))) == gathers + 3 * 4 * 126 * 4);
  const auto rows = reduce_scatter_bytes(scenario(4, 1, "name: fsdp, collectives: nccl",
                                                  "model: {size: 4012B, proxy_dim: 64}\ncompression: {name: fp16}"));
  REQUIRE(rows.size() == 1);
  CHECK(rows.begin()->second == 4 * 126 * 4);
}

TEST_CASE("fsdp refuses compressors and settings its reduce-scatter cannot carry, at the key",
          "[fsdp][compression][input]") {
  const std::string model = "model: {size: 1MB}";
  check_refused(scenario(8, 1, "name: fsdp", model + "\ncompression: {name: topk, ratio: 0.01}"),
                {"compression", "topk", "not summable", "allgather"});
  check_refused(scenario(8, 1, "name: fsdp", model + "\ncompression: {name: randomk, ratio: 0.01}"),
                {"compression", "not summable", "shared_seed"});
  check_refused(scenario(8, 1, "name: fsdp", model + "\ncompression: {name: powersgd}"),
                {"compression", "powersgd", "P and Q", "ring_allreduce"});
  check_refused(scenario(8, 1, "name: fsdp, collectives: nccl", model + "\ncompression: {name: topk, ratio: 0.01}"),
                {"compression", "topk", "not summable"});
  check_refused(scenario(8, 1, "name: fsdp, reduce_dtype: bf16", model + "\ncompression: {name: fp16}"),
                {"algorithm.reduce_dtype", "compression fp16"});
}
