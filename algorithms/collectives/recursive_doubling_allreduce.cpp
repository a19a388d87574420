// Recursive doubling all-reduce: on the largest power of two p' <= p, log2(p') rounds in which
// every rank exchanges its whole vector with the rank at distance 1, 2, 4, ... and combines; the
// r = p - p' extra ranks fold their vector into a partner first and get the result back at the end.
// Under alpha-beta: log2(p') (alpha + S beta), plus 2 (alpha + S beta) when p is not a power of two.
// Latency-optimal, bandwidth-poor: for small messages. Each rank combines its own and its partner's
// partial result, which IEEE addition gives bit-identically on both sides.
// Assumes a commutative, associative op.
//
// SMPI: same schedule as allreduce:rdb (MPICH's recursive doubling, same fold and pairing).
#include "algorithms/collectives/allreduce.hpp"
#include "algorithms/registry.hpp"

namespace aggsim {

void recursive_doubling_allreduce(Comm& comm, const Group& group, Gradient& g, const ReduceOp& op,
                                  int world) {
  const ChunkView all = whole_of(g);
  const Fold fold = fold_in(comm, group, g, all, op);
  if (fold.core_index >= 0) {
    for (int mask = 1; mask < fold.core.size(); mask <<= 1)
      exchange_combine(comm, fold.core.rank_at(fold.core_index ^ mask), g, all, all, op);
    op.finalize(g.values, world);
  }
  fold_out(comm, group, g, all);
}

AlgorithmInfo recursive_doubling_allreduce_entry() {
  AlgorithmInfo info;
  info.name = "recursive_doubling_allreduce";
  info.messages_per_rank_step = [](int p) { return 2 * log2_rounds(p); };
  info.summary = "recursive doubling: log2(p) full-vector exchanges (non-power-of-two fold)";
  info.reduces_in_flight = true;
  info.consensus = true;
  info.prepare = [](const AlgorithmConfig& cfg) {
    return independent_ranks(cfg, [](const AlgorithmConfig& c) {
      return make_world_allreduce(c.op, recursive_doubling_allreduce);
    });
  };
  return info;
}

}  // namespace aggsim
