// Proxy problems and the training loop: gradients against finite differences, loss going down
// on every problem, and data-parallel SGD equal to single-process SGD on the union of the batches.
#include <catch2/catch.hpp>
#include <cmath>
#include <map>
#include <sstream>

#include "sim/engine/simulation.hpp"
#include "sim/scenario/scenario_loader.hpp"
#include "sim/workload/trainer.hpp"
#include "support/isolated.hpp"
#include "workload_support.hpp"

using namespace aggsim;
using namespace aggsim::test;

namespace {

WorkloadOptions small(ProblemKind kind) {
  WorkloadOptions o;
  o.problem = kind;
  o.dim = 7;
  o.hidden = 5;
  o.classes = kind == ProblemKind::logistic ? 2 : 4;
  o.batch = 9;
  o.eval_samples = 64;
  return o;
}

// Central differences in double precision around float weights: the model's float arithmetic
// limits agreement to about 1e-3 relative.
void check_gradient(ProblemKind kind) {
  const WorkloadOptions o = small(kind);
  const Workload wl(o, 17);
  Rng rng = make_rng(99, Stream::workload, 1, 2);
  Eigen::VectorXf w = wl.initial_weights;
  for (Eigen::Index i = 0; i < w.size(); ++i) w[i] += 0.3f * static_cast<float>(standard_normal(rng));
  const Batch batch = wl.data.minibatch(0, 0, wl.data.class_mix(0));
  Eigen::VectorXf g;
  wl.problem->loss(w, batch, &g);
  REQUIRE(g.size() == wl.problem->size());
  const float h = 1e-2f;
  double worst = 0;
  for (Eigen::Index i = 0; i < w.size(); ++i) {
    Eigen::VectorXf plus = w, minus = w;
    plus[i] += h;
    minus[i] -= h;
    const double fd =
        (wl.problem->loss(plus, batch, nullptr) - wl.problem->loss(minus, batch, nullptr)) / (2.0 * h);
    worst = std::max(worst, std::abs(fd - g[i]) / std::max(1e-2, std::abs(fd)));
  }
  CHECK(worst < 2e-2);
}

// Runs a workload scenario in a child; returns its held-out losses, in step order.
std::vector<double> held_out_losses(const std::string& yaml) {
  const std::string text = run_isolated([&] {
    const Scenario sc = load_scenario_text(yaml, "test.yaml");
    std::string out;
    for (const auto& e : simulate(sc, {}).evaluations) out += fmt::format("{} ", e.loss);
    return out;
  });
  std::istringstream in(text);
  std::vector<double> losses;
  for (double x; in >> x;) losses.push_back(x);
  if (losses.empty()) throw std::runtime_error("no evaluations: " + text);
  return losses;
}

}  // namespace

TEST_CASE("every proxy problem's gradient matches finite differences", "[workload][math]") {
  SECTION("least squares") {
    check_gradient(ProblemKind::least_squares);
  }
  SECTION("logistic") {
    check_gradient(ProblemKind::logistic);
  }
  SECTION("softmax") {
    check_gradient(ProblemKind::softmax);
  }
  SECTION("mlp") {
    check_gradient(ProblemKind::mlp);
  }
}

TEST_CASE("training lowers the held-out loss on every proxy problem", "[workload][convergence]") {
  for (const std::string problem : {"least_squares", "logistic", "softmax", "mlp"}) {
    INFO(problem);
    const std::string yaml =
        cluster_scenario(4, 40,
                         fmt::format("model: {{size: 1MB}}\nalgorithm: {{name: ring_allreduce}}\n"
                                     "workload: {{problem: {}, dim: 16, hidden: 16, batch: 16, lr: 0.1, "
                                     "momentum: 0.5, eval_every: 5}}",
                                     problem));
    const auto losses = held_out_losses(yaml);
    REQUIRE(losses.size() == 8);
    // The starting loss, on the same held-out set.
    const Scenario sc = load_scenario_text(yaml, "test.yaml");
    const Workload wl(sc.workload.options, sc.seed);
    const double initial = wl.problem->loss(wl.initial_weights, wl.data.held_out(), nullptr);
    CHECK(losses.front() < initial);
    CHECK(losses.back() < 0.8 * initial);
    CHECK(losses.back() < losses.front());
  }
}

TEST_CASE("p ranks with batch b follow single-process SGD on batch p*b step for step", "[workload][math]") {
  const int p = 4, steps = 6;
  const std::string table = write_layer_table(5, 40, 50, 1e3);
  for (const std::string extra : {"granularity: model", "granularity: layer, bucket: 0B"}) {
    for (const std::string problem : {"softmax", "mlp"}) {
      for (double alpha : {0.0, 0.3}) {
        INFO(extra << ", " << problem << ", noniid_alpha " << alpha);
        const std::string yaml = cluster_scenario(
            p, steps,
            fmt::format("model: {{layers: {}}}\nalgorithm: {{name: ring_allreduce, {}}}\n"
                        "workload: {{problem: {}, dim: 12, hidden: 10, classes: 5, batch: 8, lr: 0.2, "
                        "momentum: 0.9, weight_decay: 0.01, noniid_alpha: {}}}",
                        table, extra, problem, alpha));
        const std::string text = run_isolated([&] {
          const Scenario sc = load_scenario_text(yaml, "test.yaml");
          const auto by_step = weights_after_each_step(sc);

          // Single process: the union of the ranks' minibatches, plain heavy-ball SGD with L2.
          const WorkloadOptions o = sc.workload.options;
          const Workload wl(o, sc.seed);
          Eigen::VectorXd w = wl.initial_weights.cast<double>(), v = Eigen::VectorXd::Zero(w.size());
          double worst = 0;
          for (int s = 0; s < steps; ++s) {
            Batch all;
            all.x.resize(o.dim, p * o.batch);
            for (int r = 0; r < p; ++r) {
              const Batch part = wl.data.minibatch(r, s, wl.data.class_mix(r));
              all.x.middleCols(r * o.batch, o.batch) = part.x;
              all.labels.insert(all.labels.end(), part.labels.begin(), part.labels.end());
            }
            Eigen::VectorXf g;
            wl.problem->loss(w.cast<float>(), all, &g);
            v = o.momentum * v + g.cast<double>() + o.weight_decay * w;
            w -= o.lr * v;
            for (const auto& rank_w : by_step.at(s))
              worst = std::max(worst,
                               (rank_w.cast<double>() - w).cwiseAbs().maxCoeff() / w.cwiseAbs().maxCoeff());
          }
          return fmt::format("{}", worst);
        });
        CHECK(std::stod(text) < 1e-5);
      }
    }
  }
}

TEST_CASE("averaging weights after local SGD steps equals averaging gradients", "[workload][math]") {
  // The SGD update is linear in the gradient: with identical starting weights, mean_i of the local
  // steps (each with its own momentum buffer) equals the step along mean_i g_i, so the two
  // mlbench modes follow the same trajectory up to float rounding.
  const auto losses = [](const std::string& apply_to) {
    return held_out_losses(cluster_scenario(
        4, 12,
        fmt::format("model: {{size: 1MB}}\nalgorithm: {{name: ring_allreduce, apply_to: {}}}\n"
                    "workload: {{problem: mlp, dim: 10, hidden: 8, classes: 4, batch: 8, lr: 0.3, "
                    "momentum: 0.9, weight_decay: 0.01, eval_every: 3}}",
                    apply_to)));
  };
  const auto by_gradients = losses("gradients"), by_weights = losses("weights");
  REQUIRE(by_gradients.size() == by_weights.size());
  for (std::size_t i = 0; i < by_gradients.size(); ++i)
    CHECK(by_weights[i] == Approx(by_gradients[i]).epsilon(1e-5));
}
