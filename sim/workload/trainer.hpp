#pragma once
// One rank's training state (weights, momentum) on the shared, read-only problem and data, and the
// optimizer: PyTorch's SGD (g += wd w; v = mu v + g; w -= lr v).
#include <Eigen/Core>
#include <cstdint>
#include <memory>
#include <vector>

#include "sim/workload/dataset.hpp"
#include "sim/workload/problem.hpp"

namespace aggsim {

// Everything all ranks share: built once, read by every rank's actor.
struct Workload {
  WorkloadOptions options;
  std::unique_ptr<Problem> problem;
  SyntheticData data;
  Eigen::VectorXf initial_weights;
  Workload(const WorkloadOptions& options, std::uint64_t seed);
};

struct SgdOptions {
  double lr = 0.05;
  double momentum = 0;
  double weight_decay = 0;
};

// One SGD step of w along g (velocity unused without momentum).
void sgd_step(Eigen::VectorXf& w, Eigen::VectorXf& velocity, const Eigen::VectorXf& g, const SgdOptions& sgd);

class RankTrainer {
 public:
  RankTrainer(const Workload& workload, int rank);
  // The local minibatch gradient at the current weights.
  Eigen::VectorXf gradient(int step) const;
  void step(const Eigen::VectorXf& gradient) { sgd_step(weights_, velocity_, gradient, sgd_); }
  Eigen::VectorXf& weights() { return weights_; }
  const Eigen::VectorXf& weights() const { return weights_; }

 private:
  const Workload& workload_;
  int rank_;
  std::vector<double> mix_;
  SgdOptions sgd_;
  Eigen::VectorXf weights_, velocity_;
};

}  // namespace aggsim
