// Rings of several shards as one (ring.hpp): the hierarchical all-reduce's g inter-node rings,
// which cross the same NIC between the same two nodes at the same time, as one ring of node-sized
// messages (hierarchical_allreduce's `node_flows: merged`).
#include "algorithms/collectives/ring.hpp"
#include "sim/api/rank_context.hpp"

namespace aggsim {

namespace {

// Chunk `c` of every shard, back to back, with the sum of their wire sizes.
Payload bundle_chunks(const ShardBundle& bundle, int n, int c) {
  Payload p;
  Eigen::Index values = 0;
  for (const Gradient* g : bundle.shards) values += chunk_of(*g, n, c).proxy.count;
  p.values.resize(values);
  Eigen::Index at = 0;
  for (const Gradient* g : bundle.shards) {
    const ChunkView v = chunk_of(*g, n, c);
    p.values.segment(at, v.proxy.count) = g->values.segment(v.proxy.begin, v.proxy.count);
    at += v.proxy.count;
    p.wire_bytes += static_cast<std::uint64_t>(v.wire.count) * kFloatBytes;
  }
  return p;
}

// Sends chunk `out` of every shard to `right` while receiving `left`'s, each shard's bytes counted
// as its own rank's message.
Payload exchange(Comm& comm, const ShardBundle& bundle, int n, int out, int right, int left) {
  Payload sent = bundle_chunks(bundle, n, out);
  Payload received = comm.sendrecv(right, std::move(sent), left);
  for (std::size_t k = 1; k < bundle.shards.size(); ++k)
    comm.count_as_sent_by(
        *bundle.comms[k],
        static_cast<std::uint64_t>(chunk_of(*bundle.shards[k], n, out).wire.count) * kFloatBytes);
  return received;
}

}  // namespace

void bundled_ring_allreduce(Comm& comm, const Group& group, const ShardBundle& bundle, const ReduceOp& op,
                            int world) {
  const int n = group.size(), me = group.me;
  const std::size_t shards = bundle.shards.size();
  const int right = group.rank_at(ring_position(me + 1, n)), left = group.rank_at(ring_position(me - 1, n));
  std::vector<std::uint64_t> reduced(shards);
  for (int s = 0; s < n - 1; ++s) {  // reduce-scatter
    const Payload received = exchange(comm, bundle, n, ring_position(me - s, n), right, left);
    Eigen::Index at = 0;
    for (std::size_t k = 0; k < shards; ++k) {
      Gradient& g = *bundle.shards[k];
      const ChunkView in = chunk_of(g, n, ring_position(me - s - 1, n));
      op.combine(g.values.segment(in.proxy.begin, in.proxy.count),
                 received.values.segment(at, in.proxy.count));
      at += in.proxy.count;
      reduced[k] = static_cast<std::uint64_t>(in.wire.count) * kFloatBytes;
    }
    charge_reduce_together(bundle.comms, bundle.hosts, reduced);
  }
  for (Gradient* g : bundle.shards) {
    const ChunkView owned = chunk_of(*g, n, ring_owned_chunk(me, n));
    op.finalize(g->values.segment(owned.proxy.begin, owned.proxy.count), world);
  }
  for (int s = 0; s < n - 1; ++s) {  // all-gather
    const Payload received = exchange(comm, bundle, n, ring_position(me - s + 1, n), right, left);
    Eigen::Index at = 0;
    for (Gradient* g : bundle.shards) {
      const ChunkView in = chunk_of(*g, n, ring_position(me - s, n));
      g->values.segment(in.proxy.begin, in.proxy.count) = received.values.segment(at, in.proxy.count);
      at += in.proxy.count;
    }
  }
}

}  // namespace aggsim
