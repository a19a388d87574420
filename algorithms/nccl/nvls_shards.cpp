#include "algorithms/nccl/nvls_shards.hpp"

#include "algorithms/nccl/nccl_op.hpp"
#include "algorithms/nccl/ring_shards.hpp"

namespace aggsim {

bool nccl_nvls_reduces(const ReduceOp& op, WireDtype dtype) {
  if (op.kind == ReduceKind::sum) return true;
  const bool min_max = op.kind == ReduceKind::min || op.kind == ReduceKind::max;
  return min_max && dtype != WireDtype::fp32;
}

NcclSystem nvls_for_op(NcclSystem system, NcclCollective collective, bool op_reduces) {
  const bool reduces = collective == NcclCollective::reduce_scatter || collective == NcclCollective::all_reduce;
  if (reduces && !op_reduces) system.nvls = false;
  return system;
}

double nvls_port_bytes_per_byte(NcclCollective collective, int gpus_per_node) {
  if (collective == NcclCollective::reduce_scatter || collective == NcclCollective::all_gather) return 1.0;
  return 1.0 + 1.0 / static_cast<double>(gpus_per_node);
}

Eigen::VectorXf nccl_nvls_reduce_scatter(const std::vector<int>& node_order,
                                         const std::vector<const Eigen::VectorXf*>& inputs, const ReduceOp& reduce_op,
                                         int world, WireDtype dtype) {
  const NcclOp op(reduce_op, world, dtype);
  const int p = static_cast<int>(inputs.size());
  const std::int64_t n = inputs.front()->size();
  Eigen::VectorXf out(n);
  for (int m = 0; m < p; ++m) {
    const Range r = nccl_shard(n, p, m);
    if (r.count == 0) continue;
    auto acc = out.segment(r.begin, r.count);
    op.load(acc, inputs[static_cast<std::size_t>(node_order.front())]->segment(r.begin, r.count));
    for (std::size_t i = 1; i < node_order.size(); ++i)
      op.add_input(acc, inputs[static_cast<std::size_t>(node_order[i])]->segment(r.begin, r.count));
  }
  return out;
}

}  // namespace aggsim
