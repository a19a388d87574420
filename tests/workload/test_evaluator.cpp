// Held-out evaluation of the averaged model and the spread across ranks, against direct sums.
#include <catch2/catch.hpp>

#include "sim/workload/evaluator.hpp"

using namespace aggsim;

TEST_CASE("the evaluator scores the mean model and the mean squared distance to it",
          "[workload][evaluation]") {
  WorkloadOptions o;
  o.problem = ProblemKind::softmax;
  o.dim = 6;
  o.classes = 3;
  o.eval_every = 2;
  o.eval_samples = 100;
  const Workload wl(o, 8);
  const int world = 3, steps = 5;
  Evaluator ev(wl, world, steps, true);
  CHECK_FALSE(ev.due(0));
  CHECK(ev.due(1));
  CHECK(ev.due(3));
  CHECK(ev.due(4));  // the last step is always evaluated

  std::vector<Eigen::VectorXf> ranks;
  Rng rng = make_rng(1, Stream::workload, 2, 3);
  for (int r = 0; r < world; ++r) {
    Eigen::VectorXf w(wl.problem->size());
    for (Eigen::Index i = 0; i < w.size(); ++i) w[i] = static_cast<float>(standard_normal(rng));
    ranks.push_back(w);
  }
  for (int r = world - 1; r >= 0; --r) {  // in any order
    CHECK(ev.results().empty());             // not before every rank has contributed
    ev.contribute(3, r, ranks[static_cast<std::size_t>(r)]);
  }
  const auto results = ev.results();
  REQUIRE(results.size() == 1);
  const Eigen::VectorXf mean = (ranks[0] + ranks[1] + ranks[2]) / 3.0f;
  double spread = 0;
  for (const auto& w : ranks) spread += (w - mean).squaredNorm() / world;
  CHECK(results[0].step == 3);
  CHECK(results[0].loss == Approx(wl.problem->loss(mean, wl.data.held_out(), nullptr)).epsilon(1e-5));
  REQUIRE(results[0].accuracy);
  CHECK(*results[0].accuracy == Approx(wl.problem->accuracy(mean, wl.data.held_out())));
  REQUIRE(results[0].consensus_distance);
  CHECK(*results[0].consensus_distance == Approx(spread).epsilon(1e-6));

  // Identical ranks (consensus algorithms): no spread is reported when not asked for.
  Evaluator same(wl, world, steps, false);
  for (int r = 0; r < world; ++r) same.contribute(4, r, ranks[0]);
  CHECK_FALSE(same.results().at(0).consensus_distance);
}
