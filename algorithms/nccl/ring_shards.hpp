#pragma once
// NCCL's ring reduce-scatter and all-gather (NCCL 2.21.5, src/device/reduce_scatter.h and
// all_gather.h): the buffer is one shard per member, member m's shard the m-th of the communicator
// (NCCL's rank order, not the ring's); each loop moves a piece of every shard on each channel.
//  - reduce-scatter: member m's shard is started by the member after m on the channel's ring, each
//    next member adds its input as the piece passes (recvReduceSend), and m adds its own last
//    (recvReduceCopy): every member ends with exactly its shard of the reduction;
//  - all-gather: member m sends its own shard around the ring; every member ends with all shards.
// Op semantics are NCCL's (nccl_op.hpp). Both movements use these pieces and this order, so the
// flow level's result (computed here at once) is the chunk level's bit for bit.
#include <Eigen/Core>
#include <cstdint>
#include <vector>

#include "algorithms/nccl/nccl_communicator.hpp"
#include "algorithms/nccl/nccl_shards.hpp"
#include "sim/api/partition.hpp"
#include "sim/api/reduce_op.hpp"

namespace aggsim {

// The piece of member `owner`'s shard that loop `loop` of channel `channel` moves, out of `loops`
// loops of `channels` channels, on a vector of n elements shared by `members` members.
Range nccl_shard_piece(std::int64_t n, int members, int owner, int loops, int channels, int loop, int channel);

// Every member's shard of the reduction, each at its place in the vector (member m keeps
// nccl_shard(n, p, m)). `rings[c]`: channel c's ring, member indices in ring order; `inputs[m]`:
// member m's vector.
Eigen::VectorXf nccl_ring_reduce_scatter(const std::vector<std::vector<int>>& rings, int loops,
                                         const std::vector<const Eigen::VectorXf*>& inputs, const ReduceOp& op,
                                         int world, WireDtype dtype = WireDtype::fp32);

// Member call.me's part of a ring reduce-scatter or all-gather at chunk level (nccl_chunk_call.hpp).
struct NcclChunkCall;
void start_ring_shard_chunks(NcclChunkCall& call);

}  // namespace aggsim
