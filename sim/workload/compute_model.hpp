#pragma once
// The timing plane of a training step. A step computes the forward pass, then the backward pass
// layer by layer in reverse order; PyTorch DDP groups the layers, in that reverse order, into
// buckets of about `bucket` bytes and starts each bucket's aggregation as soon as its last layer's
// gradient exists, so communication overlaps the rest of the backward pass. By-model aggregation
// is one bucket holding every layer: it starts after the whole backward pass. mlbench's by-layer
// aggregation is one bucket per tensor, in forward order, aggregated after the backward pass.
//
// The proxy parameter vector (the math plane) maps onto the buckets tensor by tensor: with T proxy
// tensors in aggregation order (reverse, or forward per tensor) and B buckets, tensor j goes to
// bucket floor(j B / T), so a bucket holds whole tensors (keeping matrix shapes when it holds one,
// and each tensor's shape in its proxy layout when it holds several) and buckets beyond the proxy's
// tensors carry wire bytes only. On the wire a bucket is the list of its layers' pieces (weight
// matrices, 1-D bias / norm vectors), which compressors encode one by one. Synthetic gradients (no
// workload) are split over the buckets in proportion to their wire sizes.
#include <cstdint>
#include <vector>

#include "sim/api/aggregator.hpp"
#include "sim/api/partition.hpp"
#include "sim/workload/options.hpp"
#include "sim/workload/problem.hpp"

namespace aggsim {

struct Bucket {
  std::uint64_t wire_elements = 0;
  WireLayout wire_shape;      // its layers' pieces, in aggregation order
  double backward_flops = 0;  // per sample, of this bucket's layers
  double forward_flops = 0;   // per sample, of this bucket's layers (sharded schedules compute unit by unit)
  Range proxy;                // slice of the proxy parameter vector
  Shape proxy_shape;
  WireLayout proxy_layout;              // the proxy tensors it holds, in memory order (empty if flat)
  int first_layer = 0, last_layer = 0;  // forward-order indices of the layers it holds
};

struct StepPlan {
  double forward_flops = 0;     // per sample, whole model
  std::vector<Bucket> buckets;  // in aggregation order: last layers first (per tensor: first first)
  std::int64_t proxy_size = 0;
  bool overlap = true;  // buckets aggregate while the backward pass goes on (per tensor: after it)
};

// How layers are grouped into buckets: all in one (`algorithm.granularity: model`), closed at
// `bucket_bytes` in backward order (`granularity: layer`, DDP's buckets), or one bucket per tensor
// (each layer's weight matrix, then its bias / norm vector) in forward order, aggregated after the
// backward pass (`granularity: layer, overlap: false`, mlbench's loop over model.parameters()).
enum class Bucketing { whole_model, by_size, per_tensor };

// `layers` in forward order (a flat model is one layer); with Bucketing::by_size, `bucket_bytes` 0
// means one layer per bucket. Empty `proxy_tensors`: a flat synthetic proxy of `proxy_dim` numbers.
StepPlan make_step_plan(const std::vector<LayerSpec>& layers, Bucketing bucketing, std::uint64_t bucket_bytes,
                        const std::vector<TensorInfo>& proxy_tensors, std::int64_t proxy_dim);

// Per-rank compute slowdowns: 1 / speed factor, times seeded straggler noise per rank and step.
class ComputeModel {
 public:
  ComputeModel(SpeedFactors speed, const StragglerOptions& straggler, std::uint64_t seed)
      : speed_(std::move(speed)), straggler_(straggler), seed_(seed) {}
  double slowdown(int rank, int step) const;

 private:
  SpeedFactors speed_;
  StragglerOptions straggler_;
  std::uint64_t seed_;
};

}  // namespace aggsim
