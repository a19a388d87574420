// A communicator's PAT call at chunk level: every member walks NCCL's steps (pat_schedule.hpp) on
// each channel, one connection per dimension, every piece a message.
#include "algorithms/nccl/pat_call.hpp"

#include <fmt/format.h>

#include <cmath>

#include "algorithms/nccl/chunk_connection.hpp"
#include "algorithms/nccl/nccl_op.hpp"
#include "algorithms/nccl/pat_schedule.hpp"

namespace aggsim {

int pat_call_aggregation(const NcclCallPlan& plan, int ranks) {
  const double part = plan.data_bytes / (static_cast<double>(ranks) * std::max(1, plan.choice.channels));
  return pat_aggregation(ranks, plan.chunking.chunk_bytes, part);
}

void NcclCommunicator::run_pat_chunks(Comm& comm, int me, Gradient& grad, const NcclCallPlan& plan,
                                      const ReduceOp& reduce_op, int world) {
  const NcclCollective collective = options_.collective;
  const bool scatter = collective == NcclCollective::reduce_scatter;
  const int p = view_.size(), channels = plan.choice.channels, loops = plan.loops;
  const NcclOp op(reduce_op, world, options_.dtype);
  const bool math = grad.values.size() > 0;
  const std::int64_t n = grad.values.size(), w = static_cast<std::int64_t>(grad.wire_elements);
  const Eigen::VectorXf& x = grad.values;
  Eigen::VectorXf result = math ? Eigen::VectorXf(Eigen::VectorXf::Zero(n)) : Eigen::VectorXf();
  const std::vector<PatStep> steps = pat_steps(collective, p, pat_call_aggregation(plan, p));
  int dims = 0;
  while ((1 << dims) < p) ++dims;
  std::vector<std::int64_t> arriving(static_cast<std::size_t>(dims), 0);
  for (const PatStep& s : steps)
    if (s.recv_dim >= 0) arriving[static_cast<std::size_t>(s.recv_dim)] += loops;
  comm.pause_until(sg4::Engine::get_clock() + costs_.base(NcclAlgorithm::pat, Protocol::simple));
  const int tag = 1 << 20, slots = plan.chunking.slots;
  std::vector<sg4::ActorPtr> actors;
  for (int c = 0; c < channels; ++c) {
    actors.push_back(sg4::Actor::create(fmt::format("nccl-{}-pat{}", view_.rank_of(me), c), view_.host_of(me), [&, c] {
      std::vector<std::unique_ptr<nccl_chunk::Inbox>> in;
      std::vector<std::unique_ptr<nccl_chunk::Outbox>> out;
      for (int d = 0; d < dims; ++d) {
        const int from = pat_peer(collective, me, d, false, p), to = pat_peer(collective, me, d, true, p);
        in.push_back(std::make_unique<nccl_chunk::Inbox>(comm, view_.rank_of(from), tag + 32 * d + c, slots,
                                                         arriving[static_cast<std::size_t>(d)],
                                                         arrival_delay(from, me, Protocol::simple)));
        out.push_back(
            std::make_unique<nccl_chunk::Outbox>(comm, view_.host_of(me), view_.rank_of(to), tag + 32 * d + c, slots));
      }
      // Each node's piece this loop: a reduce-scatter's partial result, an all-gather's copy.
      std::vector<Eigen::VectorXf> piece(static_cast<std::size_t>(p));
      std::vector<char> held(static_cast<std::size_t>(p));
      for (int l = 0; l < loops; ++l) {
        std::fill(held.begin(), held.end(), 0);
        for (const PatStep& s : steps) {
          const int owner = (me + s.node) % p;
          const Range r = pat_piece(n, p, owner, channels, loops, c, l);
          const std::int64_t wires = pat_piece(w, p, owner, channels, loops, c, l).count;
          auto& value = piece[static_cast<std::size_t>(s.node)];
          Eigen::VectorXf arrived;
          if (s.recv_dim >= 0) arrived = in[static_cast<std::size_t>(s.recv_dim)]->take().values;
          if (!held[static_cast<std::size_t>(s.node)]) {
            held[static_cast<std::size_t>(s.node)] = 1;
            // A reduce-scatter's node starts from its own input; an all-gather's from what its parent
            // sent (its own shard at the root), which it keeps.
            value.resize(math ? r.count : 0);
            if (math && scatter) {
              op.load(value, x.segment(r.begin, r.count));
            } else if (math) {
              if (s.recv_dim >= 0) {
                value = std::move(arrived);
              } else {
                value = x.segment(r.begin, r.count);
                round_to(value, options_.dtype);
              }
              result.segment(r.begin, r.count) = value;
            }
          }
          if (math && scatter && s.recv_dim >= 0) op.combine(value, arrived);
          if (math && scatter && s.node == 0 && &s == &steps.back()) result.segment(r.begin, r.count) = value;
          if (s.send_dim >= 0) {
            Payload sent;
            sent.values = value;
            sent.wire_bytes = static_cast<std::uint64_t>(
                std::ceil(costs_.wire_bytes(static_cast<double>(wires) * 4, Protocol::simple)));
            out[static_cast<std::size_t>(s.send_dim)]->put(std::move(sent));
          }
        }
      }
      for (auto& o : out) o->flush();
    }));
  }
  for (auto& actor : actors) actor->join();
  if (math) grad.values = std::move(result);
}

}  // namespace aggsim
