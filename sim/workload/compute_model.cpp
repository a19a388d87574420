#include "sim/workload/compute_model.hpp"

#include <algorithm>
#include <cmath>

#include "sim/workload/sampling.hpp"

namespace aggsim {

namespace {

// A layer's pieces on the wire: its weight matrix (a vector when it has one column), then the rest
// of its parameters (bias, norm scale and shift) as one 1-D vector. A model known only by its size
// is one flat run.
void add_pieces(const LayerSpec& l, WireLayout& wire) {
  if (l.unstructured) {
    wire.pieces.push_back({{l.params, 1}, false});
    return;
  }
  wire.pieces.push_back({{l.rows, l.cols}, l.cols == 1});
  if (const std::int64_t extra = l.params - l.rows * l.cols; extra > 0)
    wire.pieces.push_back({{extra, 1}, true});
}

std::vector<Bucket> group_layers(const std::vector<LayerSpec>& layers, Bucketing bucketing,
                                 std::uint64_t bucket_bytes) {
  std::vector<Bucket> buckets;
  Bucket cur;
  bool open = false;
  for (int i = static_cast<int>(layers.size()) - 1; i >= 0; --i) {
    const LayerSpec& l = layers[static_cast<std::size_t>(i)];
    if (!open) {
      cur = Bucket{};
      cur.last_layer = i;
      open = true;
    }
    cur.first_layer = i;
    cur.wire_elements += static_cast<std::uint64_t>(l.params);
    add_pieces(l, cur.wire_shape);
    cur.backward_flops += l.backward_flops;
    cur.forward_flops += l.forward_flops;
    if (bucketing == Bucketing::by_size && cur.wire_elements * kFloatBytes >= bucket_bytes) {
      buckets.push_back(cur);
      open = false;
    }
  }
  if (open) buckets.push_back(cur);
  return buckets;
}

// mlbench's order: every tensor of every layer, first layer first, each its own bucket whose
// backward pass is its layer's (charged once, to the layer's first tensor).
std::vector<Bucket> tensor_buckets(const std::vector<LayerSpec>& layers) {
  std::vector<Bucket> buckets;
  for (int i = 0; i < static_cast<int>(layers.size()); ++i) {
    const LayerSpec& l = layers[static_cast<std::size_t>(i)];
    WireLayout pieces;
    add_pieces(l, pieces);
    for (std::size_t k = 0; k < pieces.pieces.size(); ++k) {
      Bucket b;
      b.first_layer = b.last_layer = i;
      b.wire_shape.pieces = {pieces.pieces[k]};
      b.wire_elements = static_cast<std::uint64_t>(pieces.pieces[k].shape.size());
      b.backward_flops = k == 0 ? l.backward_flops : 0;
      b.forward_flops = k == 0 ? l.forward_flops : 0;
      buckets.push_back(b);
    }
  }
  return buckets;
}

// Tensor j of T, in aggregation order (reverse unless `forward`), to bucket floor(j B / T): each
// bucket gets a contiguous run, and its proxy layout lists the run's tensors in memory order
// (one-column tensors as vectors: biases, and least squares' weight, a 1 x dim matrix that
// low-rank compressors never factor either).
void assign_tensors(std::vector<Bucket>& buckets, const std::vector<TensorInfo>& tensors, bool forward) {
  const auto B = static_cast<std::int64_t>(buckets.size()), T = static_cast<std::int64_t>(tensors.size());
  for (std::int64_t j = 0; j < T; ++j) {
    const TensorInfo& t = tensors[static_cast<std::size_t>(forward ? j : T - 1 - j)];
    Bucket& b = buckets[static_cast<std::size_t>(j * B / T)];
    const std::int64_t n = t.shape.size();
    auto& pieces = b.proxy_layout.pieces;
    pieces.insert(forward ? pieces.end() : pieces.begin(), WirePiece{t.shape, t.shape.cols == 1});
    if (b.proxy.count == 0) {
      b.proxy = {t.offset, n};
      b.proxy_shape = t.shape;
    } else if (forward) {  // later tensor in memory joins the run: flat shape
      b.proxy = {b.proxy.begin, b.proxy.count + n};
      b.proxy_shape = {b.proxy.count, 1};
    } else {  // earlier tensor in memory joins the run: flat shape
      b.proxy = {t.offset, b.proxy.count + n};
      b.proxy_shape = {b.proxy.count, 1};
    }
  }
}

// Flat proxy split by cumulative wire fraction.
void assign_flat(std::vector<Bucket>& buckets, std::int64_t proxy_dim) {
  double total = 0;
  for (const Bucket& b : buckets) total += static_cast<double>(b.wire_elements);
  double cumulative = 0;
  std::int64_t begin = 0;
  for (Bucket& b : buckets) {
    cumulative += static_cast<double>(b.wire_elements);
    const auto end = &b == &buckets.back()
                         ? proxy_dim
                         : static_cast<std::int64_t>(std::llround(proxy_dim * cumulative / total));
    b.proxy = {begin, end - begin};
    b.proxy_shape = {end - begin, 1};
    begin = end;
  }
}

}  // namespace

StepPlan make_step_plan(const std::vector<LayerSpec>& layers, Bucketing bucketing, std::uint64_t bucket_bytes,
                        const std::vector<TensorInfo>& proxy_tensors, std::int64_t proxy_dim) {
  StepPlan plan;
  for (const LayerSpec& l : layers) plan.forward_flops += l.forward_flops;
  const bool per_tensor = bucketing == Bucketing::per_tensor;
  plan.buckets = per_tensor ? tensor_buckets(layers) : group_layers(layers, bucketing, bucket_bytes);
  plan.overlap = !per_tensor;
  plan.proxy_size = proxy_dim;
  if (proxy_tensors.empty())
    assign_flat(plan.buckets, proxy_dim);
  else
    assign_tensors(plan.buckets, proxy_tensors, per_tensor);
  return plan;
}

double ComputeModel::slowdown(int rank, int step) const {
  double factor = 1.0 / speed_.of(rank);
  if (straggler_.kind == StragglerKind::none) return factor;
  Rng rng =
      make_rng(seed_, Stream::compute, static_cast<std::uint64_t>(rank), static_cast<std::uint64_t>(step));
  if (uniform01(rng) >= straggler_.probability) return factor;
  if (straggler_.kind == StragglerKind::lognormal)
    return factor * std::exp(straggler_.sigma * standard_normal(rng));
  return factor * (1.0 + exponential_sample(rng, straggler_.mean));
}

}  // namespace aggsim
