#pragma once
// Synthetic data, generated from the seed instead of read from files, so thousands of ranks share
// nothing but a few cluster centres. Inputs come from a Gaussian mixture: cluster c has centre
// mu_c ~ N(0, s^2 I) with s = 3 / sqrt(2 dim) (centres about 3 noise standard deviations apart)
// and unit noise. Classification labels are the cluster; least-squares targets are w*.x + 0.1 N(0,1)
// for a teacher w* ~ N(0, I/dim). Each rank draws a fresh minibatch every step from its own stream
// (an endless shard), over its own cluster mix: uniform (IID) or Dirichlet(alpha) (non-IID, as in
// Hsu et al. 2019). The held-out set is drawn once from the uniform mix.
#include <Eigen/Core>
#include <cstdint>
#include <vector>

#include "sim/workload/options.hpp"
#include "sim/workload/problem.hpp"

namespace aggsim {

class SyntheticData {
 public:
  SyntheticData(const WorkloadOptions& options, std::uint64_t seed);

  // Rank's cluster mix (uniform when IID).
  std::vector<double> class_mix(int rank) const;
  // Rank's minibatch at `step` (the same call always gives the same samples).
  Batch minibatch(int rank, int step, const std::vector<double>& mix) const;
  // n samples from `mix`, drawn from `rng`.
  Batch sample(Rng& rng, const std::vector<double>& mix, int n) const;
  const Batch& held_out() const { return held_out_; }

 private:
  WorkloadOptions options_;
  std::uint64_t seed_;
  Eigen::MatrixXf centres_;  // dim x clusters
  Eigen::VectorXf teacher_;
  Batch held_out_;
};

}  // namespace aggsim
