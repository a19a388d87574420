#pragma once
// Ring building blocks (reusable by hierarchical and 2D-torus schemes).
#include "algorithms/collectives/group.hpp"

namespace aggsim {

// Reduce-scatter over a ring of the group: n-1 steps; afterwards member i holds the fully reduced
// (not yet finalized) chunk ring_owned_chunk(i, n) of n chunks. Other chunks hold partial sums.
void ring_reduce_scatter(Comm& comm, const Group& group, Gradient& grad, const ReduceOp& op);
// All-gather over a ring: member i starts owning chunk ring_owned_chunk(i, n); afterwards every
// member holds every chunk.
void ring_allgather(Comm& comm, const Group& group, Gradient& grad);

inline int ring_owned_chunk(int index, int n) {
  return (index + 1) % n;
}

}  // namespace aggsim
