#pragma once
// Held-out evaluation of the averaged model x_bar = mean_i x_i, every `eval_every` steps and after
// the last step. Ranks contribute their weights as they finish a step (they may be at different
// steps when the scheme is asynchronous); the last contributor triggers the evaluation. For
// schemes without consensus it also reports the spread mean_i ||x_i - x_bar||^2 (from running sums
// folded in rank order: memory is one model per pending evaluation plus the models of ranks that
// finished before a lower rank).
#include <Eigen/Core>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "sim/core/rank_order.hpp"
#include "sim/workload/trainer.hpp"

namespace aggsim {

struct Evaluation {
  int step = 0;
  double loss = 0;
  std::optional<double> accuracy;            // classification problems
  std::optional<double> consensus_distance;  // schemes without consensus
};

class Evaluator {
 public:
  Evaluator(const Workload& workload, int world, int steps, bool report_spread);
  bool due(int step) const;
  void contribute(int step, int rank, const Eigen::VectorXf& weights);
  // Completed evaluations, by step.
  std::vector<Evaluation> results() const;

 private:
  struct Pending {
    // Sums in rank order, the same rounding in every run. A rank whose weights are bit for bit the
    // first reported ones shares that copy (after an all-reduce all do): one copy a step, not one
    // a rank waiting for a lower one.
    InRankOrder<std::shared_ptr<const Eigen::VectorXf>> order;
    std::shared_ptr<const Eigen::VectorXf> first;
    Eigen::VectorXd sum;
    double sum_squared_norms = 0;
  };
  const Workload& workload_;
  int world_, steps_;
  bool report_spread_;
  std::map<int, Pending> pending_;
  std::map<int, Evaluation> done_;
};

}  // namespace aggsim
