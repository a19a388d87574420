#pragma once
// A reduce-scatter's and an all-gather's shards, whichever algorithm moves them (NCCL's layout:
// member m's shard the m-th of the buffer in the communicator's rank order), and the result of such
// a call: the all-gather's copies, or the reduce-scatter of the algorithm's row (nccl_algorithm.hpp).
#include <Eigen/Core>
#include <cstdint>
#include <vector>

#include "algorithms/nccl/nccl_communicator.hpp"
#include "sim/api/partition.hpp"
#include "sim/api/reduce_op.hpp"

namespace aggsim {

// Member m's shard of a vector of n elements shared by `members` members (balanced, as chunk_range).
inline Range nccl_shard(std::int64_t n, int members, int m) {
  return chunk_range(n, members, m);
}

// The gathered vector: member m's own shard of its input at the place of shard m, as `dtype` holds it.
Eigen::VectorXf nccl_all_gather(const std::vector<const Eigen::VectorXf*>& inputs,
                                WireDtype dtype = WireDtype::fp32);

// The result of a reduce-scatter (every shard at its place, in the order of the call's algorithm)
// or an all-gather call as the communicator plans it, from every member's input.
Eigen::VectorXf nccl_shard_collective(const NcclView& view, const NcclCallPlan& plan,
                                      NcclCollective collective,
                                      const std::vector<const Eigen::VectorXf*>& inputs, const ReduceOp& op,
                                      int world, WireDtype dtype);

// Zeroes all but member m's shard of `values` (what a reduce-scatter leaves the member).
void keep_shard(Eigen::VectorXf& values, int members, int m);

}  // namespace aggsim
