// A communicator's PAT call at chunk level: every member walks NCCL's steps (pat_schedule.hpp) on
// each channel, one connection per dimension, every piece a message.
#include "algorithms/nccl/pat_call.hpp"

#include <fmt/format.h>

#include <cmath>
#include <memory>

#include "algorithms/nccl/chunk_connection.hpp"
#include "algorithms/nccl/nccl_chunk_call.hpp"
#include "algorithms/nccl/nccl_op.hpp"
#include "algorithms/nccl/pat_schedule.hpp"

namespace aggsim {

int pat_call_aggregation(const NcclCallPlan& plan, int ranks) {
  const double part = plan.data_bytes / (static_cast<double>(ranks) * std::max(1, plan.choice.channels));
  return pat_aggregation(ranks, plan.chunking.chunk_bytes, part);
}

namespace {

// Channel c's walk of NCCL's steps, `loops` times (PAT runs Simple only: the call's protocol).
void walk_pat_channel(NcclChunkCall& call, const std::vector<PatStep>& steps, int dims,
                      const std::vector<std::int64_t>& arriving, int c) {
  const NcclCollective collective = call.collective;
  const bool scatter = collective == NcclCollective::reduce_scatter, math = call.math;
  const int p = call.p, me = call.me, channels = call.channels, loops = call.plan.loops;
  const std::int64_t n = call.n, w = call.w;
  const Eigen::VectorXf& x = call.x;
  std::vector<std::unique_ptr<nccl_chunk::Inbox>> in;
  std::vector<std::unique_ptr<nccl_chunk::Outbox>> out;
  for (int d = 0; d < dims; ++d) {
    const int from = pat_peer(collective, me, d, false, p), to = pat_peer(collective, me, d, true, p);
    in.push_back(std::make_unique<nccl_chunk::Inbox>(call.comm, call.view.rank_of(from), call.tag + 32 * d + c,
                                                     call.slots, arriving[static_cast<std::size_t>(d)],
                                                     call.arrival_delay(from, me)));
    out.push_back(std::make_unique<nccl_chunk::Outbox>(call.comm, call.view.host_of(me), call.view.rank_of(to),
                                                       call.tag + 32 * d + c, call.slots));
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
          call.op.load(value, x.segment(r.begin, r.count));
        } else if (math) {
          if (s.recv_dim >= 0) {
            value = std::move(arrived);
          } else {
            value = x.segment(r.begin, r.count);
            round_to(value, call.dtype);
          }
          call.result.segment(r.begin, r.count) = value;
        }
      }
      if (math && scatter && s.recv_dim >= 0) call.op.combine(value, arrived);
      if (math && scatter && s.node == 0 && &s == &steps.back()) call.result.segment(r.begin, r.count) = value;
      if (s.send_dim >= 0) out[static_cast<std::size_t>(s.send_dim)]->put(call.payload(value, wires));
    }
  }
  for (auto& o : out) o->flush();
}

}  // namespace

// Member call.me's part: one actor per channel, one connection per dimension.
void start_pat_chunks(NcclChunkCall& call) {
  // What every channel's actor reads: NCCL's steps and the pieces each dimension's connection receives.
  struct Walk {
    std::vector<PatStep> steps;
    int dims = 0;
    std::vector<std::int64_t> arriving;
  };
  const int p = call.p;
  auto walk = std::make_shared<Walk>();
  walk->steps = pat_steps(call.collective, p, pat_call_aggregation(call.plan, p));
  while ((1 << walk->dims) < p) ++walk->dims;
  walk->arriving.assign(static_cast<std::size_t>(walk->dims), 0);
  for (const PatStep& s : walk->steps)
    if (s.recv_dim >= 0) walk->arriving[static_cast<std::size_t>(s.recv_dim)] += call.plan.loops;
  for (int c = 0; c < call.channels; ++c)
    call.start(fmt::format("nccl-{}-pat{}", call.view.rank_of(call.me), c),
               [&call, walk, c] { walk_pat_channel(call, walk->steps, walk->dims, walk->arriving, c); });
}

}  // namespace aggsim
