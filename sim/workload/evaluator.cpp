#include "sim/workload/evaluator.hpp"

#include "sim/core/same_bits.hpp"

namespace aggsim {

Evaluator::Evaluator(const Workload& workload, int world, int steps, bool report_spread)
    : workload_(workload), world_(world), steps_(steps), report_spread_(report_spread) {}

bool Evaluator::due(int step) const {
  return (step + 1) % workload_.options.eval_every == 0 || step == steps_ - 1;
}

void Evaluator::contribute(int step, int rank, const Eigen::VectorXf& weights) {
  Pending& p = pending_[step];
  p.order.add(rank, share_if_same(p.first, weights),
              [&p](const std::shared_ptr<const Eigen::VectorXf>& in_order) {
                const Eigen::VectorXd w = in_order->cast<double>();
                if (p.sum.size() == 0) p.sum = Eigen::VectorXd::Zero(w.size());
                p.sum += w;
                p.sum_squared_norms += w.squaredNorm();
              });
  if (p.order.folded() < world_) return;

  const Eigen::VectorXd mean = p.sum / world_;
  const Eigen::VectorXf model = mean.cast<float>();
  const Problem& problem = *workload_.problem;
  const Batch& held_out = workload_.data.held_out();
  Evaluation e;
  e.step = step;
  e.loss = problem.loss(model, held_out, nullptr);
  if (problem.classification()) e.accuracy = problem.accuracy(model, held_out);
  // mean ||x_i||^2 - ||x_bar||^2, clamped: rounding may make an exact zero slightly negative
  if (report_spread_) e.consensus_distance = std::max(0.0, p.sum_squared_norms / world_ - mean.squaredNorm());
  done_[step] = e;
  pending_.erase(step);
}

std::vector<Evaluation> Evaluator::results() const {
  std::vector<Evaluation> out;
  for (const auto& [step, e] : done_) out.push_back(e);
  return out;
}

}  // namespace aggsim
