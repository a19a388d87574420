// Adapter from a group all-reduce function to the per-rank Aggregator interface.
#include "algorithms/collectives/allreduce.hpp"
#include "algorithms/collectives/ring.hpp"

namespace aggsim {

namespace {

class WorldAllreduce final : public Aggregator {
 public:
  WorldAllreduce(ReduceOp op, GroupAllreduce fn) : op_(op), fn_(std::move(fn)) {}
  void aggregate(RankContext& ctx, Gradient& grad) override {
    fn_(*ctx.comm, Group::world(ctx), grad, op_, ctx.world);
  }

 private:
  ReduceOp op_;
  GroupAllreduce fn_;
};

}  // namespace

std::unique_ptr<Aggregator> make_world_allreduce(ReduceOp op, GroupAllreduce fn) {
  return std::make_unique<WorldAllreduce>(op, std::move(fn));
}

GroupAllreduce with_chunks(ChunkedAllreduce fn, int chunks) {
  return [fn, chunks](Comm& comm, const Group& group, Gradient& g, const ReduceOp& op, int world) {
    fn(comm, group, g, op, world, chunks);
  };
}

void two_level_allreduce(Comm& comm, const Group& local, const Group& across, Gradient& g, const ReduceOp& op,
                         int world, const GroupAllreduce& inner) {
  ring_reduce_scatter(comm, local, g, op);
  const ChunkView owned = chunk_of(g, local.size(), ring_owned_chunk(local.me, local.size()));
  Gradient shard = flat_gradient(g.values.segment(owned.proxy.begin, owned.proxy.count),
                                 static_cast<std::uint64_t>(owned.wire.count));
  inner(comm, across, shard, op, world);
  g.values.segment(owned.proxy.begin, owned.proxy.count) = shard.values;
  ring_allgather(comm, local, g);
}

}  // namespace aggsim
