#pragma once
// All-reduce algorithms as functions on a Group, so composite schemes (hierarchical, 2D torus) can
// run them on sub-groups. Each one reduces the whole gradient `g` over the group with `op` and
// finalizes exactly once with `world` (the divisor of avg), leaving every member bit-identical.
#include <cstdint>
#include <functional>
#include <memory>

#include "algorithms/collectives/blocks.hpp"

namespace aggsim {

using GroupAllreduce = std::function<void(Comm&, const Group&, Gradient&, const ReduceOp&, int world)>;

void ring_allreduce(Comm& comm, const Group& group, Gradient& g, const ReduceOp& op, int world);
void halving_doubling_allreduce(Comm& comm, const Group& group, Gradient& g, const ReduceOp& op, int world);
void recursive_doubling_allreduce(Comm& comm, const Group& group, Gradient& g, const ReduceOp& op, int world);
void tree_allreduce(Comm& comm, const Group& group, Gradient& g, const ReduceOp& op, int world, int chunks);
void double_binary_tree_allreduce(Comm& comm, const Group& group, Gradient& g, const ReduceOp& op, int world,
                                  int chunks);

// The double binary tree pipelines each half in pieces of at most `chunk_bytes` (NCCL's way: a
// fixed chunk size, so large messages get many pieces and small ones one): this many pieces for a
// gradient of `wire_elements` fp32 elements, at least 1 and at most kMaxDoubleBinaryTreeChunks.
inline constexpr std::uint64_t kDefaultChunkBytes = 512 * 1024;
inline constexpr const char* kDefaultChunkBytesText = "512KiB";
inline constexpr int kMaxDoubleBinaryTreeChunks = 1 << 20;
int double_binary_tree_chunks(std::uint64_t wire_elements, std::uint64_t chunk_bytes);

// Binds the pipelining parameter of tree_allreduce / double_binary_tree_allreduce.
using ChunkedAllreduce = void (*)(Comm&, const Group&, Gradient&, const ReduceOp&, int world, int chunks);
GroupAllreduce with_chunks(ChunkedAllreduce fn, int chunks);

// Reduce-scatter (ring) inside `local`, all-reduce of my shard among `across` with `inner`, then
// all-gather (ring) inside `local`. Used by the hierarchical and 2D-torus algorithms.
void two_level_allreduce(Comm& comm, const Group& local, const Group& across, Gradient& g, const ReduceOp& op,
                         int world, const GroupAllreduce& inner);

// An Aggregator running `fn` over all ranks.
std::unique_ptr<Aggregator> make_world_allreduce(ReduceOp op, GroupAllreduce fn);

}  // namespace aggsim
