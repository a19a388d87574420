// Recursive halving reduce-scatter and recursive doubling all-gather on a power-of-two group, and
// the fold that reduces any group to a power of two (Thakur, Rabenseifner & Gropp 2005; MPICH).
// Halving: in step k (distance n/2^(k+1)) each member keeps the half of its current block range on
// its side of the partner and sends the other half: log2 n steps, (n-1)/n of the segment sent.
// Doubling mirrors it. Assumes a commutative, associative op.
#include <stdexcept>

#include "algorithms/collectives/blocks.hpp"

namespace aggsim {

namespace {
void require_power_of_two(const Group& group, const char* what) {
  const int n = group.size();
  if (n & (n - 1)) throw std::logic_error(std::string(what) + " needs a power-of-two group");
}
}  // namespace

void halving_reduce_scatter(Comm& comm, const Group& group, Gradient& g, const ChunkView& seg,
                            const ReduceOp& op) {
  require_power_of_two(group, "halving_reduce_scatter");
  const int n = group.size(), me = group.me;
  int lo = 0, hi = n;  // chunks whose reduction I am still responsible for
  for (int mask = n / 2; mask >= 1; mask >>= 1) {
    const int mid = lo + (hi - lo) / 2;
    const bool lower = (me & mask) == 0;
    const ChunkView keep = lower ? chunk_span(seg, n, lo, mid) : chunk_span(seg, n, mid, hi);
    const ChunkView give = lower ? chunk_span(seg, n, mid, hi) : chunk_span(seg, n, lo, mid);
    exchange_combine(comm, group.rank_at(me ^ mask), g, give, keep, op);
    (lower ? hi : lo) = mid;
  }
}

void doubling_allgather(Comm& comm, const Group& group, Gradient& g, const ChunkView& seg) {
  require_power_of_two(group, "doubling_allgather");
  const int n = group.size(), me = group.me;
  for (int mask = 1; mask < n; mask <<= 1) {
    const int mine = me & ~(mask - 1), theirs = mine ^ mask;  // aligned blocks of `mask` chunks
    const ChunkView have = chunk_span(seg, n, mine, mine + mask);
    const ChunkView get = chunk_span(seg, n, theirs, theirs + mask);
    unpack(g, {get},
           comm.sendrecv(group.rank_at(me ^ mask), dense_chunk_payload(g, have), group.rank_at(me ^ mask)));
  }
}

Fold fold_in(Comm& comm, const Group& group, Gradient& g, const ChunkView& seg, const ReduceOp& op) {
  const int n = group.size(), i = group.me;
  const int core_size = largest_power_of_two_at_most(n), extra = n - core_size;
  Fold f;
  for (int k = 0; k < core_size; ++k)
    f.core.add(group.rank_at(k < extra ? 2 * k + 1 : k + extra));
  if (i < 2 * extra && i % 2 == 0) {
    comm.send(group.rank_at(i + 1), dense_chunk_payload(g, seg));
    return f;
  }
  if (i < 2 * extra) combine_into(comm, g, seg, comm.recv(group.rank_at(i - 1)), op);
  f.core_index = i < 2 * extra ? i / 2 : i - extra;
  f.core.me = f.core_index;
  return f;
}

void fold_out(Comm& comm, const Group& group, Gradient& g, const ChunkView& seg) {
  const int n = group.size(), i = group.me;
  const int extra = n - largest_power_of_two_at_most(n);
  if (i >= 2 * extra) return;
  if (i % 2 == 1)
    comm.send(group.rank_at(i - 1), dense_chunk_payload(g, seg));
  else
    unpack(g, {seg}, comm.recv(group.rank_at(i + 1)));
}

}  // namespace aggsim
