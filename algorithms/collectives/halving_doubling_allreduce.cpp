// Recursive halving-doubling all-reduce (Rabenseifner): reduce-scatter by recursive halving, then
// all-gather by recursive doubling, on the largest power of two p' <= p; the r = p - p' extra ranks
// first fold their vector into a partner and get the result back at the end (MPICH's scheme).
// Under alpha-beta: 2 log2(p') alpha + 2 (p'-1)/p' S beta, plus 2 (alpha + S beta) when p is not a
// power of two. Assumes a commutative, associative op.
//
// SMPI: same schedule as allreduce:rab_rdb (MPICH's Rabenseifner, fold included), except that our
// halving starts at distance p'/2 (as allreduce:rab1 does) where rab_rdb starts at distance 1; on a
// flat cluster both orders cost the same. rab1 itself accepts only powers of two and finishes with
// SMPI's default all-gather instead of recursive doubling. SMPI splits a count that does not divide
// by p' unevenly (the last block takes the remainder); we balance blocks to within one element.
#include "algorithms/collectives/allreduce.hpp"
#include "algorithms/registry.hpp"

namespace aggsim {

void halving_doubling_allreduce(Comm& comm, const Group& group, Gradient& g, const ReduceOp& op, int world) {
  const ChunkView all = whole_of(g);
  const Fold fold = fold_in(comm, group, g, all, op);
  if (fold.core_index >= 0) {
    const int n = fold.core.size();
    halving_reduce_scatter(comm, fold.core, g, all, op);
    const ChunkView mine = sub_chunk(all, n, fold.core_index);
    op.finalize(g.values.segment(mine.proxy.begin, mine.proxy.count), world);
    doubling_allgather(comm, fold.core, g, all);
  }
  fold_out(comm, group, g, all);
}

AlgorithmInfo halving_doubling_allreduce_entry() {
  AlgorithmInfo info;
  info.name = "halving_doubling_allreduce";
  info.messages_per_rank_step = [](int p) { return 2 * log2_rounds(p); };
  info.summary =
      "Rabenseifner: recursive-halving reduce-scatter + recursive-doubling all-gather (non-power-of-two "
      "fold)";
  info.reduces_in_flight = true;
  info.consensus = true;
  info.prepare = [](const AlgorithmConfig& cfg) {
    return independent_ranks(
        cfg, [](const AlgorithmConfig& c) { return make_world_allreduce(c.op, halving_doubling_allreduce); });
  };
  return info;
}

}  // namespace aggsim
