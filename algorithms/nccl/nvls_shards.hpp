#pragma once
// NCCL's NVLS reduce-scatter and all-gather inside one node (NCCL 2.21.5: src/enqueue.cc runs them
// on one node only; src/device/reduce_scatter.h and all_gather.h, the NVLS pattern). The node's
// switch reduces: for each member's shard it reads that shard from every GPU and hands the member
// the reduction (a GPU's port sends its whole buffer and receives its shard); an all-gather's
// member stores its shard once and the switch multicasts it to every GPU (a port sends the shard
// and receives the whole buffer). The switch's order of addition is not public: aggsim adds the
// node's GPUs in local order, as for NVLS all-reduce.
#include <Eigen/Core>
#include <vector>

#include "algorithms/nccl/nccl_op.hpp"
#include "algorithms/nccl/nccl_tuning.hpp"
#include "sim/api/reduce_op.hpp"

namespace aggsim {

// Whether NCCL's NVLS reduces with this op on this type (src/include/device.h ncclNvlsSupported,
// NCCL 2.21.5): fp32 by sum only, bf16 and fp16 by sum, min or max; avg is NCCL's PreMulSum, which
// the switch does not do.
bool nccl_nvls_reduces(const ReduceOp& op, WireDtype dtype = WireDtype::fp32);

// The system NCCL's choice sees for a call: NVLS and NVLS-Tree off for an all-reduce or a
// reduce-scatter whose op and type NVLS does not reduce (src/enqueue.cc passes nvlsSupport &&
// ncclNvlsSupported(op, type) to its choice; an all-gather only copies).
NcclSystem nvls_for_op(NcclSystem system, NcclCollective collective, bool op_reduces);

// Bytes a GPU's busiest port direction carries per byte of the call's buffer under NVLS: an
// all-reduce's S (1 + 1/g) each way, a reduce-scatter's or an all-gather's S one way.
double nvls_port_bytes_per_byte(NcclCollective collective, int gpus_per_node);

// Every member's shard of the reduction at its place (member m keeps nccl_shard(n, p, m)):
// `node_order` the node's members in local order.
Eigen::VectorXf nccl_nvls_reduce_scatter(const std::vector<int>& node_order,
                                         const std::vector<const Eigen::VectorXf*>& inputs, const ReduceOp& op,
                                         int world, WireDtype dtype = WireDtype::fp32);

}  // namespace aggsim
