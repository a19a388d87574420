#pragma once
// Error feedback (Seide et al. 2014; Karimireddy et al. 2019), GRACE's `residual` memory: before
// compressing, add the residual of what previous steps did not send; afterwards keep
// residual = compensated - decompress(payload). Per tensor id; a tensor whose size changes starts
// from a zero residual.
#include <map>

#include "algorithms/memory/memory.hpp"

namespace aggsim {

class ResidualMemory final : public Memory {
 public:
  // g + the tensor's residual (zero the first time).
  Eigen::VectorXf compensate(std::uint64_t id, const Eigen::Ref<const Eigen::VectorXf>& g) const override;
  // residual = compensated - sent
  void update(std::uint64_t id, const Eigen::VectorXf& compensated,
              const Eigen::Ref<const Eigen::VectorXf>& sent) override;
  // One addition to compensate, one subtraction to update.
  double flops_per_value() const override { return 2.0; }
  // Null before the first update of `id`.
  const Eigen::VectorXf* residual(std::uint64_t id) const;

 private:
  std::map<std::uint64_t, Eigen::VectorXf> residuals_;
};

}  // namespace aggsim
