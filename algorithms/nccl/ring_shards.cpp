// NCCL's ring reduce-scatter and all-gather: their math (ring_shards.hpp) and their chunk-level
// movement, every slice of every piece one message around the channel's ring.
#include "algorithms/nccl/ring_shards.hpp"

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>

#include "algorithms/nccl/chunk_connection.hpp"
#include "algorithms/nccl/nccl_communicator.hpp"
#include "algorithms/nccl/nccl_op.hpp"
#include "algorithms/nccl/nvls_shards.hpp"
#include "algorithms/nccl/pat_call.hpp"
#include "algorithms/nccl/pat_schedule.hpp"

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

Eigen::VectorXf nccl_all_gather(const std::vector<const Eigen::VectorXf*>& inputs, WireDtype dtype) {
  const int p = static_cast<int>(inputs.size());
  const std::int64_t n = inputs.front()->size();
  Eigen::VectorXf out(n);
  for (int m = 0; m < p; ++m) {
    const Range r = nccl_shard(n, p, m);
    out.segment(r.begin, r.count) = inputs[static_cast<std::size_t>(m)]->segment(r.begin, r.count);
  }
  round_to(out, dtype);
  return out;
}

Eigen::VectorXf nccl_shard_collective(const NcclView& view, const NcclCallPlan& plan, NcclCollective collective,
                                      const std::vector<const Eigen::VectorXf*>& inputs, const ReduceOp& op,
                                      int world, WireDtype dtype) {
  if (collective == NcclCollective::all_gather) return nccl_all_gather(inputs, dtype);
  if (collective != NcclCollective::reduce_scatter)
    throw std::logic_error("nccl_shard_collective: a reduce-scatter or all-gather");
  if (plan.choice.algorithm == NcclAlgorithm::nvls)
    return nccl_nvls_reduce_scatter(view.node_members(0), inputs, op, world, dtype);
  if (plan.choice.algorithm == NcclAlgorithm::pat)
    return nccl_pat_reduce_scatter(pat_call_aggregation(plan, view.size()), inputs, op, world, dtype);
  if (plan.choice.algorithm != NcclAlgorithm::ring)
    throw std::logic_error("nccl_shard_collective: NCCL runs reduce-scatter by ring, NVLS or PAT");
  std::vector<std::vector<int>> rings;
  for (int c = 0; c < plan.choice.channels; ++c) rings.push_back(view.ring(c));
  return nccl_ring_reduce_scatter(rings, plan.loops, inputs, op, world, dtype);
}

void keep_shard(Eigen::VectorXf& values, int members, int m) {
  const Range mine = nccl_shard(values.size(), members, m);
  const Eigen::VectorXf kept = values.segment(mine.begin, mine.count);
  values.setZero();
  values.segment(mine.begin, mine.count) = kept;
}

// Member `me`'s part at chunk level: one actor per channel, receiving from the member before it on
// the channel's ring and sending to the one after, p - 1 steps per loop, each piece in NCCL's slices.
void NcclCommunicator::run_ring_shard_chunks(Comm& comm, int me, Gradient& grad, const NcclCallPlan& plan,
                                             const ReduceOp& reduce_op, int world) {
  const Protocol proto = plan.choice.protocol;
  const int channels = plan.choice.channels, p = view_.size(), slices = plan.chunking.slices_per_chunk;
  if (plan.choice.algorithm != NcclAlgorithm::ring)
    throw std::logic_error("chunk-level reduce-scatter and all-gather run the ring only");
  const bool scatter = options_.collective == NcclCollective::reduce_scatter;
  const NcclOp op(reduce_op, world, options_.dtype);
  const bool math = grad.values.size() > 0;
  const std::int64_t n = grad.values.size(), w = static_cast<std::int64_t>(grad.wire_elements);
  Eigen::VectorXf result = math ? Eigen::VectorXf(Eigen::VectorXf::Zero(n)) : Eigen::VectorXf();
  const Eigen::VectorXf& x = grad.values;
  comm.pause_until(sg4::Engine::get_clock() + costs_.base(plan.choice.algorithm, proto));
  const int tag = 1 << 20, slots = plan.chunking.slots;
  std::vector<sg4::ActorPtr> actors;
  for (int c = 0; c < channels; ++c) {
    actors.push_back(sg4::Actor::create(fmt::format("nccl-{}-shards{}", view_.rank_of(me), c), view_.host_of(me), [&, c] {
      const std::vector<int> ring = view_.ring(c);
      const int q = static_cast<int>(std::find(ring.begin(), ring.end(), me) - ring.begin());
      const auto at = [&](int k) { return ring[static_cast<std::size_t>(((q + k) % p + p) % p)]; };
      nccl_chunk::Inbox in(comm, view_.rank_of(at(-1)), tag + c, slots,
                           static_cast<std::int64_t>(plan.loops) * (p - 1) * slices, arrival_delay(at(-1), me, proto));
      nccl_chunk::Outbox out(comm, view_.host_of(me), view_.rank_of(at(1)), tag + c, slots,
                             channel_rate(me, at(1)));
      for (int l = 0; l < plan.loops; ++l) {
        // Slice j of this loop's piece of `owner`'s shard, on both planes.
        const auto slice = [&](int owner, int j) {
          const Range pr = nccl_shard_piece(n, p, owner, plan.loops, channels, l, c),
                      wr = nccl_shard_piece(w, p, owner, plan.loops, channels, l, c);
          const Range ps = chunk_range(pr.count, slices, j), ws = chunk_range(wr.count, slices, j);
          return std::pair<Range, std::int64_t>{Range{pr.begin + ps.begin, ps.count}, ws.count};
        };
        const auto send = [&](Eigen::VectorXf values, std::int64_t wire_elements) {
          Payload piece;
          piece.values = std::move(values);
          piece.wire_bytes = static_cast<std::uint64_t>(
              std::ceil(costs_.wire_bytes(static_cast<double>(wire_elements) * 4, proto)));
          out.put(std::move(piece));
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
                  op.load(value, x.segment(r.begin, r.count));
                } else {
                  value = x.segment(r.begin, r.count);
                  round_to(value, options_.dtype);
                }
              }
            } else {
              value = in.take().values;
              if (math && scatter) op.add_input(value, x.segment(r.begin, r.count));
            }
            const bool last = s == p - 1;
            if (math && (!scatter || last)) result.segment(r.begin, r.count) = value;
            if (!last) send(std::move(value), wires);
          }
      }
      out.flush();
    }));
  }
  for (auto& actor : actors) actor->join();
  if (math) grad.values = std::move(result);
}

}  // namespace aggsim
