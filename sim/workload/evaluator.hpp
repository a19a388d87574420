#pragma once
// Held-out evaluation of the averaged model x_bar = mean_i x_i, every `eval_every` steps and after
// the last step. Ranks contribute their weights as they finish a step (they may be at different
// steps when the scheme is asynchronous); the last contributor triggers the evaluation. For
// schemes without consensus it also reports the spread mean_i ||x_i - x_bar||^2 (from running sums,
// so memory stays one model per pending evaluation, whatever the rank count).
#include <Eigen/Core>
#include <map>
#include <optional>
#include <vector>

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
  void contribute(int step, const Eigen::VectorXf& weights);
  // Completed evaluations, by step.
  std::vector<Evaluation> results() const;

 private:
  struct Pending {
    Eigen::VectorXd sum;
    double sum_squared_norms = 0;
    int count = 0;
  };
  const Workload& workload_;
  int world_, steps_;
  bool report_spread_;
  std::map<int, Pending> pending_;
  std::map<int, Evaluation> done_;
};

}  // namespace aggsim
