#include "sim/api/reduce_op.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <stdexcept>

namespace aggsim {

void ReduceOp::combine(Eigen::Ref<Eigen::VectorXf> acc,
                       const Eigen::Ref<const Eigen::VectorXf>& incoming) const {
  switch (kind) {
    case ReduceKind::min:
      acc = acc.cwiseMin(incoming);
      break;
    case ReduceKind::max:
      acc = acc.cwiseMax(incoming);
      break;
    default:
      acc += incoming;
      break;
  }
}

void ReduceOp::finalize(Eigen::Ref<Eigen::VectorXf> reduced, int world_size) const {
  if (kind == ReduceKind::avg) reduced /= static_cast<float>(world_size);
  if (kind == ReduceKind::custom_avg) reduced /= static_cast<float>(denominator);
}

const char* reduce_kind_name(ReduceKind kind) {
  switch (kind) {
    case ReduceKind::sum:
      return "sum";
    case ReduceKind::avg:
      return "avg";
    case ReduceKind::min:
      return "min";
    case ReduceKind::max:
      return "max";
    case ReduceKind::custom_avg:
      return "custom_avg";
  }
  return "?";
}

namespace {
constexpr ReduceKind kAllKinds[] = {ReduceKind::sum, ReduceKind::avg, ReduceKind::min, ReduceKind::max,
                                    ReduceKind::custom_avg};
}  // namespace

std::vector<std::string> reduce_kind_names() {
  std::vector<std::string> names;
  for (auto k : kAllKinds) names.push_back(reduce_kind_name(k));
  return names;
}

ReduceKind parse_reduce_kind(const std::string& name) {
  for (auto k : kAllKinds)
    if (name == reduce_kind_name(k)) return k;
  throw std::invalid_argument(
      fmt::format("must be one of {} (got '{}')", fmt::join(reduce_kind_names(), " | "), name));
}

}  // namespace aggsim
