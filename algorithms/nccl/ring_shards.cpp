// NCCL's ring reduce-scatter and all-gather: their math (ring_shards.hpp) and their chunk-level
// movement, every slice of every piece one message around the channel's ring.
#include "algorithms/nccl/ring_shards.hpp"

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>

#include "algorithms/nccl/chunk_connection.hpp"
#include "algorithms/nccl/nccl_chunk_call.hpp"
#include "algorithms/nccl/nccl_communicator.hpp"
#include "algorithms/nccl/nccl_op.hpp"

namespace aggsim {

Range nccl_shard_piece(std::int64_t n, int members, int owner, int loops, int channels, int loop, int channel) {
  const Range shard = nccl_shard(n, members, owner);
  const Range piece = chunk_range(shard.count, static_cast<std::int64_t>(loops) * channels,
                                  static_cast<std::int64_t>(loop) * channels + channel);
  return {shard.begin + piece.begin, piece.count};
}

Eigen::VectorXf nccl_ring_reduce_scatter(const std::vector<std::vector<int>>& rings, int loops,
                                         const std::vector<const Eigen::VectorXf*>& inputs, const ReduceOp& reduce_op,
                                         int world, WireDtype dtype) {
  const NcclOp op(reduce_op, world, dtype);
  const int p = static_cast<int>(inputs.size()), channels = static_cast<int>(rings.size());
  const std::int64_t n = inputs.front()->size();
  Eigen::VectorXf out = Eigen::VectorXf::Zero(n);
  for (int c = 0; c < channels; ++c) {
    const std::vector<int>& ring = rings[static_cast<std::size_t>(c)];
    for (int q = 0; q < p; ++q) {
      const int owner = ring[static_cast<std::size_t>(q)];
      for (int l = 0; l < loops; ++l) {
        const Range r = nccl_shard_piece(n, p, owner, loops, channels, l, c);
        if (r.count == 0) continue;
        auto acc = out.segment(r.begin, r.count);
        // Started by the member after the owner; the owner's own input is added last.
        op.load(acc, inputs[static_cast<std::size_t>(ring[static_cast<std::size_t>((q + 1) % p)])]->segment(
                         r.begin, r.count));
        for (int j = 2; j <= p; ++j)
          op.add_input(acc, inputs[static_cast<std::size_t>(ring[static_cast<std::size_t>((q + j) % p)])]->segment(
                                r.begin, r.count));
      }
    }
  }
  return out;
}

// The ring's row of the table (nccl_algorithms.cpp): channel c's shards go round view.ring(c).
Eigen::VectorXf ring_call_reduce_scatter(const NcclView& view, const NcclCallPlan& plan,
                                         const std::vector<const Eigen::VectorXf*>& inputs, const ReduceOp& op,
                                         int world, WireDtype dtype) {
  std::vector<std::vector<int>> rings;
  for (int c = 0; c < plan.choice.channels; ++c) rings.push_back(view.ring(c));
  return nccl_ring_reduce_scatter(rings, plan.loops, inputs, op, world, dtype);
}

// Member call.me's part at chunk level: one actor per channel, receiving from the member before it
// on the channel's ring and sending to the one after, p - 1 steps per loop, each piece in NCCL's
// slices.
void start_ring_shard_chunks(NcclChunkCall& call) {
  const int me = call.me;
  for (int c = 0; c < call.channels; ++c) {
    call.start(fmt::format("nccl-{}-shards{}", call.view.rank_of(me), c), [&call, c, me] {
      const NcclCallPlan& plan = call.plan;
      const int channels = call.channels, p = call.p, slices = plan.chunking.slices_per_chunk;
      const bool scatter = call.collective == NcclCollective::reduce_scatter;
      const NcclView& view = call.view;
      const bool math = call.math;
      const std::int64_t n = call.n, w = call.w;
      const Eigen::VectorXf& x = call.x;
      const std::vector<int> ring = view.ring(c);
      const int q = static_cast<int>(std::find(ring.begin(), ring.end(), me) - ring.begin());
      const auto at = [&](int k) { return ring[static_cast<std::size_t>(((q + k) % p + p) % p)]; };
      nccl_chunk::Inbox in(call.comm, view.rank_of(at(-1)), call.tag + c, call.slots,
                           static_cast<std::int64_t>(plan.loops) * (p - 1) * slices, call.arrival_delay(at(-1), me));
      nccl_chunk::Outbox out(call.comm, view.host_of(me), view.rank_of(at(1)), call.tag + c, call.slots,
                             call.channel_rate(me, at(1)));
      for (int l = 0; l < plan.loops; ++l) {
        // Slice j of this loop's piece of `owner`'s shard, on both planes.
        const auto slice = [&](int owner, int j) {
          const Range pr = nccl_shard_piece(n, p, owner, plan.loops, channels, l, c),
                      wr = nccl_shard_piece(w, p, owner, plan.loops, channels, l, c);
          const Range ps = chunk_range(pr.count, slices, j), ws = chunk_range(wr.count, slices, j);
          return std::pair<Range, std::int64_t>{Range{pr.begin + ps.begin, ps.count}, ws.count};
        };
        // Step s (0 .. p-1) moves the shard of the member s + 1 positions back (reduce-scatter:
        // reduced so far) or s positions back (all-gather).
        for (int s = 0; s < p; ++s)
          for (int j = 0; j < slices; ++j) {
            const auto [r, wires] = slice(at(scatter ? -1 - s : -s), j);
            Eigen::VectorXf value;
            if (s == 0) {
              if (math) {
                value.resize(r.count);
                if (scatter) {
                  call.op.load(value, x.segment(r.begin, r.count));
                } else {
                  value = x.segment(r.begin, r.count);
                  round_to(value, call.dtype);
                }
              }
            } else {
              value = in.take().values;
              if (math && scatter) call.op.add_input(value, x.segment(r.begin, r.count));
            }
            const bool last = s == p - 1;
            if (math && (!scatter || last)) call.result.segment(r.begin, r.count) = value;
            if (!last) out.put(call.payload(std::move(value), wires));
          }
      }
      out.flush();
    });
  }
}

}  // namespace aggsim
