#include "algorithms/reduce_op.hpp"

#include <stdexcept>

namespace aggsim {

void ReduceOp::combine(Eigen::Ref<Eigen::VectorXf> acc, const Eigen::Ref<const Eigen::VectorXf>& incoming) const {
  switch (kind) {
    case ReduceKind::min: acc = acc.cwiseMin(incoming); break;
    case ReduceKind::max: acc = acc.cwiseMax(incoming); break;
    default: acc += incoming; break;
  }
}

void ReduceOp::finalize(Eigen::Ref<Eigen::VectorXf> reduced, int world_size) const {
  if (kind == ReduceKind::avg) reduced /= static_cast<float>(world_size);
  if (kind == ReduceKind::custom_avg) reduced /= static_cast<float>(denominator);
}

const char* reduce_kind_name(ReduceKind kind) {
  switch (kind) {
    case ReduceKind::sum: return "sum";
    case ReduceKind::avg: return "avg";
    case ReduceKind::min: return "min";
    case ReduceKind::max: return "max";
    case ReduceKind::custom_avg: return "custom_avg";
  }
  return "?";
}

ReduceKind parse_reduce_kind(const std::string& name) {
  for (auto k : {ReduceKind::sum, ReduceKind::avg, ReduceKind::min, ReduceKind::max, ReduceKind::custom_avg})
    if (name == reduce_kind_name(k)) return k;
  throw std::invalid_argument("must be one of sum | avg | min | max | custom_avg (got '" + name + "')");
}

}  // namespace aggsim
