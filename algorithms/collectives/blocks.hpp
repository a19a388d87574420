#pragma once
// Building blocks of the all-reduce algorithms, usable on any Group and on any part (segment) of a
// gradient, so hierarchical schemes can run them on sub-groups and shards. Every block moves the
// proxy numbers and sets wire bytes from the modeled element counts: both planes are cut at the
// same chunk boundaries (chunk_of / sub_chunk). Blocks that reduce leave the result unfinalized;
// the caller applies ReduceOp::finalize exactly once, on fully reduced data.
#include <vector>

#include "algorithms/collectives/group.hpp"

namespace aggsim {

// --- segments: a contiguous part of a gradient on both planes --------------------------------

inline ChunkView whole_of(const Gradient& g) {
  return {{0, g.values.size()}, {0, static_cast<std::int64_t>(g.wire_elements)}};
}

// Chunk `c` of `parts` balanced chunks of `seg`.
inline ChunkView sub_chunk(const ChunkView& seg, int parts, int c) {
  const Range p = chunk_range(seg.proxy.count, parts, c), w = chunk_range(seg.wire.count, parts, c);
  return {{seg.proxy.begin + p.begin, p.count}, {seg.wire.begin + w.begin, w.count}};
}

// Chunks [first, last) of `parts` chunks of `seg`, as one contiguous segment.
inline ChunkView chunk_span(const ChunkView& seg, int parts, int first, int last) {
  const ChunkView a = sub_chunk(seg, parts, first), b = sub_chunk(seg, parts, last - 1);
  return {{a.proxy.begin, b.proxy.begin + b.proxy.count - a.proxy.begin},
          {a.wire.begin, b.wire.begin + b.wire.count - a.wire.begin}};
}

// A payload carrying several segments of `g` back to back (dense fp32).
Payload pack(const Gradient& g, const std::vector<ChunkView>& segs);
// Writes a payload made by pack() with the same segments into `g`.
void unpack(Gradient& g, const std::vector<ChunkView>& segs, const Payload& p);
// g[seg] = g[seg] (op) payload, the reduction of seg's wire bytes charged to this rank's host
// (charge_reduce), whether or not the math plane is on.
void combine_into(Comm& comm, Gradient& g, const ChunkView& seg, const Payload& p, const ReduceOp& op);
// Sends `send` to `peer` while receiving `peer`'s copy of `recv`, and combines it into `recv`.
void exchange_combine(Comm& comm, int peer, Gradient& g, const ChunkView& send, const ChunkView& recv,
                      const ReduceOp& op);

// --- binomial trees (MPICH/SMPI "binomial" schedules), pipelined in `chunks` pieces of `seg` ---
// Member i of the group has relative rank (i - root) mod n; relative rank r's parent is r minus
// its lowest set bit. Every send is blocking (rendezvous), so a member does one transfer at a time.

// Reduce `seg` to `root`: per piece, receive from children (nearest first) and combine, then send up.
void binomial_reduce(Comm& comm, const Group& group, Gradient& g, const ChunkView& seg, const ReduceOp& op,
                     int root, int chunks = 1);
// Broadcast `seg` from `root`: per piece, receive from the parent, then send to the children,
// largest subtree first. `channel` keeps it apart from other traffic between the same ranks.
void binomial_broadcast(Comm& comm, const Group& group, Gradient& g, const ChunkView& seg, int root,
                        int chunks = 1, int channel = 0);
// Gather to `root`: member i contributes chunk i of `n` chunks of `seg`; subtrees forward what they
// have collected, so the root ends with every chunk (ceil(log2 n) rounds).
void binomial_gather(Comm& comm, const Group& group, Gradient& g, const ChunkView& seg, int root);

// --- recursive halving / doubling on a power-of-two group (Thakur et al. 2005) --------------------

// Reduce-scatter by recursive halving (distance n/2 first): member i ends owning the reduced chunk i
// of n chunks of `seg`. log2 n steps.
void halving_reduce_scatter(Comm& comm, const Group& group, Gradient& g, const ChunkView& seg,
                            const ReduceOp& op);
// All-gather by recursive doubling (distance 1 first): member i starts with chunk i of n, ends with all.
void doubling_allgather(Comm& comm, const Group& group, Gradient& g, const ChunkView& seg);

// Non-power-of-two fold (MPICH / SMPI rdb, rab_rdb): with p' the largest power of two <= n and
// r = n - p', each even member i < 2r sends its `seg` to i+1 and sits out; the other p' members form
// the core group (member 2k+1 for k < r, member k+r for k >= r). fold_in returns the core group and
// my index in it (-1 when folded away); fold_out sends the result back to the folded members.
struct Fold {
  Group core;
  int core_index = -1;
};
Fold fold_in(Comm& comm, const Group& group, Gradient& g, const ChunkView& seg, const ReduceOp& op);
void fold_out(Comm& comm, const Group& group, Gradient& g, const ChunkView& seg);

int largest_power_of_two_at_most(int n);

}  // namespace aggsim
