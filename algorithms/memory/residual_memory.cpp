#include "algorithms/memory/residual_memory.hpp"

namespace aggsim {

Eigen::VectorXf ResidualMemory::compensate(std::uint64_t id,
                                           const Eigen::Ref<const Eigen::VectorXf>& g) const {
  const Eigen::VectorXf* r = residual(id);
  if (r && r->size() == g.size()) return g + *r;
  return g;
}

void ResidualMemory::update(std::uint64_t id, const Eigen::VectorXf& compensated,
                            const Eigen::Ref<const Eigen::VectorXf>& sent) {
  residuals_[id] = compensated - sent;
}

const Eigen::VectorXf* ResidualMemory::residual(std::uint64_t id) const {
  auto it = residuals_.find(id);
  return it == residuals_.end() ? nullptr : &it->second;
}

MemoryInfo residual_memory_entry() {
  return {"residual", "error feedback: add back what earlier steps did not send (error_feedback: true)",
          [] { return std::make_unique<ResidualMemory>(); }};
}

}  // namespace aggsim
