// The interface through which an algorithm says how it ran each call (sim/api/collective_call.hpp):
// what it writes into RankContext::choice reaches collectives.csv, call by call, and algorithms that
// choose nothing leave the columns empty.
#include <catch2/catch.hpp>
#include <memory>
#include <set>

#include "algorithms/registry.hpp"
#include "sim/output/report.hpp"
#include "sim/scenario/scenario_loader.hpp"
#include "support/csv.hpp"
#include "support/isolated.hpp"

using namespace aggsim;
using namespace aggsim::test;

namespace {

// The ring all-reduce, reporting a choice that depends on the call: the protocol on the step, the
// channel count on the bucket's size (every rank reports the same, as a tuner's choice would be).
class ChoosingRing final : public Aggregator {
 public:
  explicit ChoosingRing(std::unique_ptr<Aggregator> ring) : ring_(std::move(ring)) {}
  void aggregate(RankContext& ctx, Gradient& grad) override {
    REQUIRE(ctx.choice != nullptr);
    REQUIRE(ctx.choice->nccl_algorithm.empty());  // a fresh record for every call
    ctx.choice->nccl_algorithm = "ring";
    ctx.choice->protocol = ctx.step % 2 == 0 ? "LL128" : "Simple";
    ctx.choice->channels = static_cast<int>(grad.wire_elements * kFloatBytes / 1'000'000) + 1;
    ring_->aggregate(ctx, grad);
  }

 private:
  std::unique_ptr<Aggregator> ring_;
};

}  // namespace

TEST_CASE("an algorithm's per-call choice reaches collectives.csv", "[outputs][collectives]") {
  const std::string csv = run_isolated([] {
    Scenario sc = load_scenario_text(std::string(R"(name: choice
ranks: 4
steps: 3
platform: {topology: cluster, hosts: 4, bandwidth: 10Gbps, latency: 1us, speed: 1Tf}
network: alpha_beta
model: {layers: )") + AGGSIM_SOURCE_DIR + R"(/scenarios/models/resnet18_cifar10.yaml, batch: 32, math: off}
algorithm: {name: ring_allreduce, granularity: layer, bucket: 5MB}
engine: {replay: false}
)",
                                     "choice.yaml");
    static AlgorithmInfo choosing = *sc.algorithm.entry;
    const AlgorithmInfo& ring = *sc.algorithm.entry;
    choosing.prepare = [&ring](const AlgorithmConfig& config) {
      AlgorithmRun run = ring.prepare(config);
      run.make_aggregator = [inner = run.make_aggregator] { return std::make_unique<ChoosingRing>(inner()); };
      return run;
    };
    sc.algorithm.entry = &choosing;
    return collectives_csv(sc, simulate(sc, {}));
  });
  const auto rows = parse_csv(csv);
  REQUIRE(rows.size() > 3);
  REQUIRE(rows[0][5] == "nccl_algorithm");
  REQUIRE(rows[0][6] == "protocol");
  REQUIRE(rows[0][7] == "channels");
  std::set<std::string> channels;
  for (std::size_t i = 1; i < rows.size(); ++i) {
    const auto& r = rows[i];
    CHECK(r[5] == "ring");
    CHECK(r[6] == (std::stoi(r[0]) % 2 == 0 ? "LL128" : "Simple"));
    CHECK(r[7] == std::to_string(std::stoll(r[8]) / 1'000'000 + 1));
    channels.insert(r[7]);
  }
  CHECK(channels.size() > 1);  // the record is per call, not per run
}
