#include "algorithms/sharded/fsdp_memory.hpp"

#include <algorithm>
#include <numeric>

namespace aggsim {

namespace {
// The most units gathered at once while the passes walk them: one, or with prefetch a unit and
// the next one.
double largest_gathered_window(const std::vector<std::uint64_t>& units, bool prefetch) {
  double peak = 0;
  for (std::size_t i = 0; i < units.size(); ++i) {
    double now = static_cast<double>(units[i]);
    if (prefetch && i + 1 < units.size()) now += static_cast<double>(units[i + 1]);
    peak = std::max(peak, now);
  }
  return peak;
}
}  // namespace

FsdpMemory fsdp_memory(const FsdpMemoryInput& in) {
  const double total = std::accumulate(in.unit_elements.begin(), in.unit_elements.end(), 0.0);
  const double n = in.shard_group;
  const double optimizer_per_param = in.param_bytes == 4 ? 8.0 : 12.0;
  FsdpMemory m;
  const bool zero1 = in.sharding == FsdpSharding::optimizer;
  // ZeRO-1 keeps whole parameters and gradients; FSDP's shardings keep both sharded between uses.
  m.param_bytes_per_rank = total * static_cast<double>(in.param_bytes) / (zero1 ? 1.0 : n);
  m.grad_bytes_per_rank = total * static_cast<double>(in.grad_bytes) / (zero1 ? 1.0 : n);
  m.optimizer_bytes_per_rank = total * optimizer_per_param / n;
  // SHARD_GRAD_OP keeps each unit gathered from its forward to its backward: the whole model at the
  // turn of the step; ZeRO-1 holds it whole always.
  const double gathered = in.sharding == FsdpSharding::grad_op || zero1
                              ? total
                              : largest_gathered_window(in.unit_elements, in.prefetch);
  m.peak_gathered_bytes = gathered * static_cast<double>(in.param_bytes);
  return m;
}

}  // namespace aggsim
