#include "sim/workload/trainer.hpp"

namespace aggsim {

namespace {
Eigen::VectorXf draw_initial_weights(const Problem& problem, std::uint64_t seed) {
  Rng rng = make_rng(seed, Stream::workload, ~std::uint64_t{0}, 0);
  return problem.initial_weights(rng);
}
}  // namespace

Workload::Workload(const WorkloadOptions& o, std::uint64_t seed)
    : options(o),
      problem(make_problem(o)),
      data(o, seed),
      initial_weights(draw_initial_weights(*problem, seed)) {}

void sgd_step(Eigen::VectorXf& w, Eigen::VectorXf& velocity, const Eigen::VectorXf& g,
              const SgdOptions& sgd) {
  const float lr = static_cast<float>(sgd.lr), mu = static_cast<float>(sgd.momentum),
              wd = static_cast<float>(sgd.weight_decay);
  if (mu == 0) {
    if (wd == 0)
      w -= lr * g;
    else
      w -= lr * (g + wd * w);
    return;
  }
  if (velocity.size() != w.size()) velocity = Eigen::VectorXf::Zero(w.size());
  if (wd == 0)
    velocity = mu * velocity + g;
  else
    velocity = mu * velocity + g + wd * w;
  w -= lr * velocity;
}

RankTrainer::RankTrainer(const Workload& workload, int rank)
    : workload_(workload),
      rank_(rank),
      mix_(workload.data.class_mix(rank)),
      sgd_{workload.options.lr, workload.options.momentum, workload.options.weight_decay},
      weights_(workload.initial_weights) {}

Eigen::VectorXf RankTrainer::gradient(int step) const {
  Eigen::VectorXf g;
  workload_.problem->loss(weights_, workload_.data.minibatch(rank_, step, mix_), &g);
  return g;
}

}  // namespace aggsim
