#pragma once
// The interface every aggregation algorithm implements. An Aggregator lives inside one rank's actor
// (one instance per rank, so it may keep per-rank state such as warm starts or residuals) and is
// called once per aggregation by every rank.
#include <Eigen/Core>
#include <cstdint>
#include <memory>

#include "algorithms/rank_context.hpp"
#include "algorithms/reduce_op.hpp"

namespace aggsim {

// One rank's contribution: the proxy numbers the math runs on, and the modeled element count that
// fixes the bytes on the wire. With `math: off` the proxy is empty and only the timing plane runs.
struct Gradient {
  Eigen::VectorXf values;
  std::uint64_t wire_elements = 0;  // fp32 elements of the modeled gradient
};

class Aggregator {
 public:
  virtual ~Aggregator() = default;
  // Replaces `grad` by the reduction (with the configured op) of all ranks' gradients.
  virtual void aggregate(RankContext& ctx, Gradient& grad) = 0;
};

constexpr std::uint64_t kFloatBytes = 4;

}  // namespace aggsim
