// Binomial-tree all-reduce: binomial reduce to rank 0, then binomial broadcast from rank 0, both
// pipelined in `chunks` pieces (see binomial_tree.cpp). With L = ceil(log2 p) and t = alpha +
// (S/chunks) beta, under alpha-beta each phase costs exactly chunks * L * t: rank 0 has L children
// and does one transfer at a time, and every subtree keeps pace with it. So the whole costs
// 2 L (chunks alpha + S beta): on a flat network pipelining a binomial tree only adds latency (the
// root still moves L S bytes); it pays where links are slower than the host's uplink.
// Assumes a commutative, associative op.
//
// SMPI: allreduce:redbcast with reduce:binomial and bcast:binomial_tree is this schedule with
// chunks = 1 (SMPI's binomial reduce posts its receives in the same order; its bcast sends to the
// largest subtree first, as here). SMPI sends messages below smpi/send-is-detached-thresh (64 KiB)
// eagerly, so with pieces that small its sender no longer waits for the receiver.
#include "algorithms/collectives/allreduce.hpp"
#include "algorithms/registry.hpp"

namespace aggsim {

void tree_allreduce(Comm& comm, const Group& group, Gradient& g, const ReduceOp& op, int world, int chunks) {
  const ChunkView all = whole_of(g);
  binomial_reduce(comm, group, g, all, op, 0, chunks);
  if (group.me == 0) op.finalize(g.values, world);
  binomial_broadcast(comm, group, g, all, 0, chunks);
}

AlgorithmInfo tree_allreduce_entry() {
  AlgorithmInfo info;
  info.name = "tree_allreduce";
  info.messages_per_rank_step = [](int p) { return 2 * log2_rounds(p); };
  info.summary = "binomial-tree reduce to rank 0 + binomial broadcast, optionally pipelined";
  info.params = {
      ParamSpec("chunks", ParamKind::integer, "1", "pieces the vector is pipelined in through the tree")
          .between(1, 1 << 20)};
  info.reduces_in_flight = true;
  info.consensus = true;
  info.prepare = [](const AlgorithmConfig& cfg) {
    return independent_ranks(cfg, [](const AlgorithmConfig& c) {
      return make_world_allreduce(c.op,
                                  with_chunks(tree_allreduce, static_cast<int>(c.params.integer("chunks"))));
    });
  };
  return info;
}

}  // namespace aggsim
