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
// Matrix shape of a tensor (rows x cols; vectors are n x 1). Low-rank compressors use it.
struct Shape {
  std::int64_t rows = 0;
  std::int64_t cols = 1;
  std::int64_t size() const { return rows * cols; }
};

struct Gradient {
  Eigen::VectorXf values;
  std::uint64_t wire_elements = 0;  // fp32 elements of the modeled gradient
  Shape proxy_shape;                // shape of `values` (rows*cols == values.size()); {n, 1} if flat
  Shape wire_shape;                 // modeled tensor's shape (rows*cols == wire_elements)
};

// A flat gradient (one vector on both planes).
inline Gradient flat_gradient(Eigen::VectorXf values, std::uint64_t wire_elements) {
  Gradient g;
  g.proxy_shape = {static_cast<std::int64_t>(values.size()), 1};
  g.wire_shape = {static_cast<std::int64_t>(wire_elements), 1};
  g.values = std::move(values);
  g.wire_elements = wire_elements;
  return g;
}

class Aggregator {
 public:
  virtual ~Aggregator() = default;
  // Replaces `grad` by the reduction (with the configured op) of all ranks' gradients.
  virtual void aggregate(RankContext& ctx, Gradient& grad) = 0;
  // Called once after the last step, so schemes that leave messages in flight across steps (a
  // parameter server's late or asynchronous pushes, asynchronous gossip) receive or drain them
  // before the simulation ends: nothing is left in a mailbox.
  virtual void finish(RankContext& /*ctx*/) {}
};

constexpr std::uint64_t kFloatBytes = 4;

}  // namespace aggsim
