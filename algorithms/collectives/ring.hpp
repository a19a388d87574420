#pragma once
// Ring building blocks (reusable by hierarchical and 2D-torus schemes).
#include <vector>

#include "algorithms/collectives/group.hpp"

namespace aggsim {

// Reduce-scatter over a ring of the group: n-1 steps; afterwards member i holds the fully reduced
// (not yet finalized) chunk ring_owned_chunk(i, n) of n chunks. Other chunks hold partial sums.
// Elements travel as `element_bytes` each (fp32 by default; 2 for a 16-bit reduce dtype).
void ring_reduce_scatter(Comm& comm, const Group& group, Gradient& grad, const ReduceOp& op,
                         std::uint64_t element_bytes = kFloatBytes);
// All-gather over a ring: member i starts owning chunk ring_owned_chunk(i, n); afterwards every
// member holds every chunk.
void ring_allgather(Comm& comm, const Group& group, Gradient& grad, std::uint64_t element_bytes = kFloatBytes);

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
