#pragma once
// GRACE's Memory role: what a rank keeps, per tensor, of what compression did not send, and adds
// back before the next compression. Chosen by name (`compression.memory`, memory_table() in
// algorithms/registry.hpp); every rank owns its own.
#include <Eigen/Dense>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace aggsim {

class Memory {
 public:
  virtual ~Memory() = default;
  // What to compress for tensor `id` this step, given the rank's fresh gradient `g`.
  virtual Eigen::VectorXf compensate(std::uint64_t id, const Eigen::Ref<const Eigen::VectorXf>& g) const = 0;
  // Records that `compensated` went out as what decodes to `sent`.
  virtual void update(std::uint64_t id, const Eigen::VectorXf& compensated,
                      const Eigen::Ref<const Eigen::VectorXf>& sent) = 0;
  // Work per value of a tensor for compensate + update (flops), beyond decoding what was sent.
  virtual double flops_per_value() const = 0;
};

struct MemoryInfo {
  std::string name;
  std::string summary;
  // A rank's memory; null for `none` (nothing is kept and compression sees the gradient alone).
  std::function<std::unique_ptr<Memory>()> make;
};

}  // namespace aggsim
