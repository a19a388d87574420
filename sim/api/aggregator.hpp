#pragma once
// The interface every aggregation algorithm implements. An Aggregator lives inside one rank's actor
// (one instance per rank, so it may keep per-rank state such as warm starts or residuals) and is
// called once per aggregation by every rank.
#include <Eigen/Core>
#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "sim/api/partition.hpp"
#include "sim/api/rank_context.hpp"
#include "sim/api/reduce_op.hpp"

namespace aggsim {

// Matrix shape of a tensor (rows x cols; vectors are n x 1). Low-rank compressors use it.
struct Shape {
  std::int64_t rows = 0;
  std::int64_t cols = 1;
  std::int64_t size() const { return rows * cols; }
};

// One modeled tensor of a layer: a weight matrix (rows x cols; convolutions flattened to
// out x in*kh*kw, as PowerSGD reshapes them), a 1-D parameter vector (bias, norm scale and shift:
// `vector`, n x 1), or a flat run of unknown structure (n x 1, not `vector`: a model given only by
// its size), which matrix compressors view as a near-square matrix.
struct WirePiece {
  Shape shape;
  bool vector = false;
};

// What a gradient stands for on the wire: the modeled pieces it holds (a DDP bucket holds several
// layers, each a weight matrix and its vectors). Compressors encode each piece by their formula.
struct WireLayout {
  std::vector<WirePiece> pieces;

  static WireLayout flat(std::int64_t elements) { return {{{{elements, 1}, false}}}; }
  static WireLayout matrix(Shape s) { return {{{s, false}}}; }
  std::int64_t size() const {
    std::int64_t n = 0;
    for (const WirePiece& p : pieces) n += p.shape.size();
    return n;
  }
  // The pieces covering elements [begin, begin + count) (a parameter server's shard). Pieces inside
  // stay whole; a matrix cut by the range keeps its whole rows (of `cols` elements) as a matrix and
  // the cut-off parts of rows as flat runs; a cut vector or flat run keeps its kind.
  WireLayout slice(std::int64_t begin, std::int64_t count) const {
    WireLayout out;
    const std::int64_t end = begin + count;
    std::int64_t at = 0;
    const auto run = [&](std::int64_t n, bool vector) {
      if (n > 0) out.pieces.push_back({{n, 1}, vector});
    };
    for (const WirePiece& p : pieces) {
      const std::int64_t lo = std::max(begin, at) - at, hi = std::min(end, at + p.shape.size()) - at;
      at += p.shape.size();
      if (lo >= hi) continue;
      if (lo == 0 && hi == p.shape.size()) {
        out.pieces.push_back(p);
      } else if (p.vector || p.shape.cols == 1) {
        run(hi - lo, p.vector);
      } else {
        const std::int64_t cols = p.shape.cols, first = (lo + cols - 1) / cols, last = hi / cols;
        if (first >= last) {
          run(hi - lo, false);
          continue;
        }
        run(first * cols - lo, false);
        out.pieces.push_back({{last - first, cols}, false});
        run(hi - last * cols, false);
      }
    }
    return out;
  }
};

// One rank's contribution: the proxy numbers the math runs on, and the modeled tensor that fixes
// the bytes on the wire. With `math: off` the proxy is empty and only the timing plane runs.
struct Gradient {
  Eigen::VectorXf values;
  std::uint64_t wire_elements = 0;  // fp32 elements of the modeled gradient
  Shape proxy_shape;                // shape of `values` (rows*cols == values.size()); {n, 1} if flat
  WireLayout wire_shape;            // modeled pieces (their sizes add up to wire_elements)
  // The proxy's own tensors, in memory order (their sizes add up to values.size()): a workload's
  // named tensors, each stored column-major; 1-D ones (biases) are vectors. Empty when the proxy
  // has no structure (a synthetic flat vector, a parameter server's shard).
  WireLayout proxy_layout;
};

// A flat gradient (one vector on both planes).
inline Gradient flat_gradient(Eigen::VectorXf values, std::uint64_t wire_elements) {
  Gradient g;
  g.proxy_shape = {static_cast<std::int64_t>(values.size()), 1};
  g.wire_shape = WireLayout::flat(static_cast<std::int64_t>(wire_elements));
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
  // Sharded data parallelism only (ParameterSharding): all-gathers `params`, one bucket of the
  // rank's weights of which the rank keeps its own shard up to date, so that every rank holds the
  // whole bucket again. Called by every rank at the same points of the step.
  virtual void gather_parameters(RankContext& /*ctx*/, Gradient& /*params*/) {}
  // Sharded data parallelism only: the part of a bucket of `values` proxy values whose reduced
  // gradient aggregate() leaves this rank, the shard it updates and contributes to the gathers.
  virtual Range owned_shard(const RankContext& /*ctx*/, std::int64_t values) const { return {0, values}; }
};

// Sharded data parallelism (FSDP, ZeRO): each rank keeps only a shard of every bucket's parameters
// and gradients; aggregate() leaves a rank its own reduced shard (the rest of the gradient zero),
// the rank updates that shard, and gather_parameters() all-gathers a bucket's parameters where the
// schedule needs them whole. Buckets are the sharding's units.
struct ParameterSharding {
  bool before_forward = false;   // gathered before each unit's forward compute (freed after)
  bool before_backward = false;  // gathered again before each unit's backward compute
  bool after_step = false;       // gathered after the optimizer step (ZeRO-1)
  bool prefetch = false;         // the next unit's gather runs during this unit's compute
  std::uint64_t unit_bytes = 0;  // units: consecutive layers of at least this many fp32 bytes (0: one a layer)
  // What collectives.csv says of its calls: the ranks sharing each shard, and the bytes of an element
  // on the wire in gathers (parameters) and in reductions (gradients).
  int shard_group = 1;
  std::uint64_t param_element_bytes = 4, grad_element_bytes = 4;
  // Set when a compressor encodes the gradients: a unit's reduce-scatter input on the wire, in bytes,
  // from its modeled pieces (else grad_element_bytes an element).
  std::function<std::uint64_t(const WireLayout&)> reduce_wire_bytes = {};
};

// The calls of a sharded step, each unit's in its own slot of collectives.csv: slot = kind x units +
// unit (the unit's bucket index).
enum class ShardedCall { reduce = 0, forward_gather = 1, backward_gather = 2, step_end_gather = 3 };
constexpr int kShardedCallKinds = 4;

constexpr std::uint64_t kFloatBytes = 4;

}  // namespace aggsim
