// Binomial-tree reduce, broadcast and gather on a group (the MPICH schedules SMPI ships as
// reduce:binomial, bcast:binomial_tree and gather:binomial). Relative rank r = (i - root) mod n;
// r's parent is r with its lowest set bit cleared; r's children are r + 2^k for 2^k below that bit.
// The tree has depth ceil(log2 n). Pipelining: the segment is cut into `chunks` pieces and each
// piece goes through the whole tree pattern before the next; since sends block, a member does one
// transfer at a time and a piece climbs one level while the next enters below it.
// Assumes a commutative, associative op.
#include "algorithms/collectives/blocks.hpp"

namespace aggsim {

namespace {

int relative(const Group& group, int root) {
  return (group.me - root + group.size()) % group.size();
}
int absolute(const Group& group, int root, int rel) {
  return group.rank_at((rel + root) % group.size());
}
int lowest_bit(int r) {
  return r & -r;
}

}  // namespace

void binomial_reduce(Comm& comm, const Group& group, Gradient& g, const ChunkView& seg, const ReduceOp& op,
                     int root, int chunks) {
  const int n = group.size(), r = relative(group, root);
  if (n == 1) return;
  for (int c = 0; c < chunks; ++c) {
    const ChunkView piece = sub_chunk(seg, chunks, c);
    for (int mask = 1; mask < n; mask <<= 1) {
      if (r & mask) {
        comm.send(absolute(group, root, r - mask), dense_chunk_payload(g, piece));
        break;
      }
      if (r + mask < n) combine_into(comm, g, piece, comm.recv(absolute(group, root, r + mask)), op);
    }
  }
}

void binomial_broadcast(Comm& comm, const Group& group, Gradient& g, const ChunkView& seg, int root,
                        int chunks, int channel) {
  const int n = group.size(), r = relative(group, root);
  if (n == 1) return;
  // Children are r + mask for mask below r's lowest set bit (every mask < n for the root).
  int top = 1;
  while (top < n) top <<= 1;
  const int limit = r == 0 ? top : lowest_bit(r);
  for (int c = 0; c < chunks; ++c) {
    const ChunkView piece = sub_chunk(seg, chunks, c);
    if (r != 0) unpack(g, {piece}, comm.recv(absolute(group, root, r - lowest_bit(r)), channel));
    for (int mask = limit >> 1; mask >= 1; mask >>= 1)
      if (r + mask < n) comm.send(absolute(group, root, r + mask), dense_chunk_payload(g, piece), channel);
  }
}

namespace {

// Chunks of relative ranks [first, first+count) of `seg` (chunk of member i is chunk i of n): one
// or two contiguous spans, as the relative order wraps around the end of the segment.
std::vector<ChunkView> relative_spans(const ChunkView& seg, int n, int root, int first, int count) {
  const int begin = (first + root) % n;
  if (begin + count <= n) return {chunk_span(seg, n, begin, begin + count)};
  return {chunk_span(seg, n, begin, n), chunk_span(seg, n, 0, begin + count - n)};
}

}  // namespace

void binomial_gather(Comm& comm, const Group& group, Gradient& g, const ChunkView& seg, int root) {
  const int n = group.size(), r = relative(group, root);
  if (n == 1) return;
  int held = 1;  // I hold the chunks of relative ranks [r, r + held)
  for (int mask = 1; mask < n; mask <<= 1) {
    if (r & mask) {
      comm.send(absolute(group, root, r - mask), pack(g, relative_spans(seg, n, root, r, held)));
      return;
    }
    if (r + mask < n) {
      const int count = std::min(mask, n - (r + mask));
      unpack(g, relative_spans(seg, n, root, r + mask, count), comm.recv(absolute(group, root, r + mask)));
      held += count;
    }
  }
}

}  // namespace aggsim
