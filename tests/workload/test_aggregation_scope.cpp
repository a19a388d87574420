// mlbench semantics: by-layer (bucketed) and by-model aggregation give every rank the exact
// reduction of the whole gradient, for synthetic gradients and for a training workload's
// gradients; apply_to weights averages the locally updated models.
#include <catch2/catch.hpp>

#include "support/reduction_check.hpp"
#include "workload_support.hpp"

using namespace aggsim;
using namespace aggsim::test;

TEST_CASE("by-layer and by-model aggregation reduce the whole gradient exactly", "[workload][math]") {
  const std::string table = write_layer_table(7, 30, 20, 1e3);
  for (const std::string scope :
       {"granularity: model", "granularity: layer, bucket: 0B", "granularity: layer, bucket: 5kB"}) {
    for (const std::string op : {"avg", "sum", "max"}) {
      for (int p : {1, 3, 5}) {
        INFO(scope << ", op " << op << ", p " << p);
        const std::string synthetic = cluster_scenario(
            p, 2,
            fmt::format(
                "model: {{layers: {}, proxy_dim: 1001}}\nalgorithm: {{name: ring_allreduce, op: {}, {}}}",
                table, op, scope));
        const auto e = check_reduction(synthetic);
        CHECK(e.checked_vectors == 2 * p);
        CHECK(e.max_abs_error <= summation_tolerance(p, e.reference_scale));
        CHECK(e.max_rank_spread == 0.0);
      }
    }
    for (const std::string apply : {"gradients", "weights"}) {
      INFO(scope << ", workload, apply_to " << apply);
      const std::string trained = cluster_scenario(
          5, 3,
          fmt::format("model: {{layers: {}}}\nalgorithm: {{name: ring_allreduce, {}, apply_to: {}}}\n"
                      "workload: {{problem: mlp, dim: 8, hidden: 6, classes: 3, batch: 4}}",
                      table, scope, apply));
      const auto e = check_reduction(trained);
      CHECK(e.checked_vectors == 15);
      CHECK(e.max_abs_error <= summation_tolerance(5, e.reference_scale));
      CHECK(e.max_rank_spread == 0.0);
    }
  }
}
