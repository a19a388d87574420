#pragma once
// Ring building blocks (reusable by hierarchical and 2D-torus schemes).
#include <vector>

#include "algorithms/collectives/group.hpp"
#include "sim/api/wire_dtype.hpp"

namespace aggsim {

// The n chunks a ring cuts a gradient into, when they are not chunk_of(g, n, c): payloads of their
// own sizes put back to back (a compressor's encoding of each shard), chunk c at index c.
using RingChunks = std::vector<ChunkView>;

// Reduce-scatter over a ring of the group: n-1 steps; afterwards member i holds the fully reduced
// (not yet finalized) chunk ring_owned_chunk(i, n) of n chunks. Other chunks hold partial sums.
// Elements travel as `dtype` (fp32 by default): in a 16-bit type the inputs are that type's values
// and every partial sum is rounded to it (nearest even), as NCCL's kernels hold them.
void ring_reduce_scatter(Comm& comm, const Group& group, Gradient& grad, const ReduceOp& op,
                         WireDtype dtype = WireDtype::fp32, const RingChunks* chunks = nullptr);
// All-gather over a ring: member i starts owning chunk ring_owned_chunk(i, n); afterwards every
// member holds every chunk. In a 16-bit `dtype` the chunks received are that type's values; the
// member's own chunk stays as it was (FSDP's fp32 master copy of a rank's shard).
void ring_allgather(Comm& comm, const Group& group, Gradient& grad, WireDtype dtype = WireDtype::fp32);

// Several rings over the same members, run by one actor as one: member i holds `shards[k]` for
// ring k (ring k's member i is rank k of node i, say), all of the same wire size, and each step
// sends one message carrying chunk c of every shard (the sum of their wire sizes). Every shard is
// reduced exactly as ring_allreduce would reduce it on its own ring: same chunks, same order, the
// same finalize. Reductions are charged to each shard's own rank and host (charge_reduce_together),
// and each message's bytes to the rank whose shard they carry (bytes and messages as with g rings).
struct ShardBundle {
  std::vector<Gradient*> shards;
  std::vector<Comm*> comms;       // shard k's rank's Comm (its reduce cost and counters, its tape)
  std::vector<sg4::Host*> hosts;  // shard k's rank's host
};
void bundled_ring_allreduce(Comm& comm, const Group& group, const ShardBundle& bundle, const ReduceOp& op,
                            int world);

// Position `a` on a ring of n (a may be negative or n and above): the left neighbour of 0 is n-1.
inline int ring_position(int a, int n) {
  return ((a % n) + n) % n;
}

inline int ring_owned_chunk(int index, int n) {
  return (index + 1) % n;
}

}  // namespace aggsim
