// Ring all-reduce (Patarasuk & Yuan): reduce-scatter then all-gather, each n-1 steps in which every
// member sends one chunk to its right neighbour and receives one from its left. Under alpha-beta
// it costs 2(p-1)(alpha + (S/p)/beta). Assumes a commutative, associative op; the summation order
// of each chunk is the ring's, as on real hardware. Matches SMPI's allreduce:lr when S divides by p
// (lr sends a remainder with a second all-reduce).
#include "algorithms/collectives/allreduce.hpp"
#include "algorithms/collectives/blocks.hpp"
#include "algorithms/collectives/ring.hpp"
#include "algorithms/registry.hpp"

namespace aggsim {

void ring_reduce_scatter(Comm& comm, const Group& group, Gradient& grad, const ReduceOp& op, WireDtype dtype,
                         const RingChunks* chunks) {
  round_to(grad.values, dtype);  // the inputs are held in the wire's type
  const int n = group.size(), me = group.me;
  if (n == 1) return;
  const int right = group.rank_at(ring_position(me + 1, n)), left = group.rank_at(ring_position(me - 1, n));
  const auto chunk = [&](int c) {
    return chunks ? (*chunks)[static_cast<std::size_t>(c)] : chunk_of(grad, n, c);
  };
  for (int s = 0; s < n - 1; ++s) {
    const ChunkView out = chunk(ring_position(me - s, n));
    const ChunkView in = chunk(ring_position(me - s - 1, n));
    Payload received = comm.sendrecv(right, dense_chunk_payload(grad, out, wire_dtype_bytes(dtype)), left);
    combine_into(comm, grad, in, received, op);
    round_to(grad.values.segment(in.proxy.begin, in.proxy.count), dtype);
  }
}

void ring_allgather(Comm& comm, const Group& group, Gradient& grad, WireDtype dtype) {
  const int n = group.size(), me = group.me;
  if (n == 1) return;
  const int right = group.rank_at(ring_position(me + 1, n)), left = group.rank_at(ring_position(me - 1, n));
  for (int s = 0; s < n - 1; ++s) {
    const ChunkView out = chunk_of(grad, n, ring_position(me - s + 1, n));
    const ChunkView in = chunk_of(grad, n, ring_position(me - s, n));
    Payload received = comm.sendrecv(right, dense_chunk_payload(grad, out, wire_dtype_bytes(dtype)), left);
    round_to(received.values, dtype);  // what the sender sent in the wire's type
    grad.values.segment(in.proxy.begin, in.proxy.count) = received.values;
  }
}

void ring_allreduce(Comm& comm, const Group& group, Gradient& g, const ReduceOp& op, int world) {
  ring_reduce_scatter(comm, group, g, op);
  // Finalize (e.g. divide for avg) once, on the owned chunk, so all ranks end bit-identical.
  const ChunkView owned = chunk_of(g, group.size(), ring_owned_chunk(group.me, group.size()));
  op.finalize(g.values.segment(owned.proxy.begin, owned.proxy.count), world);
  ring_allgather(comm, group, g);
}

AlgorithmInfo ring_allreduce_entry() {
  AlgorithmInfo info;
  info.name = "ring_allreduce";
  info.messages_per_rank_step = [](int p) { return 2.0 * (p - 1); };
  info.summary = "ring reduce-scatter + all-gather; 2(p-1) steps of S/p bytes";
  info.reduces_in_flight = true;
  info.consensus = true;
  info.prepare = [](const AlgorithmConfig& cfg) {
    return independent_ranks(
        cfg, [](const AlgorithmConfig& c) { return make_world_allreduce(c.op, ring_allreduce); });
  };
  return info;
}

}  // namespace aggsim
