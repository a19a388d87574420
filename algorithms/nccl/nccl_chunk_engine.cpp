// The chunk-level movement (movement: chunk, the reference): every piece one message, at most
// NCCL's slots in flight per connection, each receive usable a hop latency after it arrives. Ring
// and tree all-reduce here; reduce-scatter and all-gather in ring_shards.cpp.
#include <fmt/format.h>

#include <stdexcept>

#include "algorithms/nccl/chunk_connection.hpp"
#include "algorithms/nccl/nccl_algorithm.hpp"

namespace aggsim {

// A piece from member `from` is usable by `to` this long after its bytes arrived: its route's
// latency (chunk-level transfers carry none of their own) and the protocol's per-hop cost.
double NcclCommunicator::arrival_delay(int from, int to, Protocol proto) const {
  std::vector<sg4::Link*> links;
  double latency = 0;
  view_.host_of(from)->route_to(view_.host_of(to), links, &latency);
  return latency + costs_.hop(view_.hop_class(from, to), proto);
}

// One member's all-reduce at chunk level: what its channels' actors share.
struct NcclCommunicator::ChunkRun {
  Comm& comm;
  int me;
  const NcclCallPlan& plan;
  const Geometry& g;
  const ProtocolCosts& costs;
  NcclOp op;
  Protocol proto;
  int channels, p, tag, slots;
  bool math;
  std::int64_t n, w;  // the proxy's values and the fp32 elements they stand for
  const Eigen::VectorXf& x;
  Eigen::VectorXf result;

  // The payload of proxy values standing for `wire_elements` fp32 elements.
  Payload payload(Eigen::VectorXf values, std::int64_t wire_elements) const {
    Payload out;
    out.values = std::move(values);
    out.wire_bytes = wire_of(static_cast<double>(wire_elements) * 4, proto, costs);
    return out;
  }
  // This member's own input over `r`, loaded as the op loads it.
  Eigen::VectorXf own(const Range& r) const {
    Eigen::VectorXf v(r.count);
    if (r.count > 0) op.load(v, x.segment(r.begin, r.count));
    return v;
  }
};

void NcclCommunicator::run_chunks(Comm& comm, int me, Gradient& grad, const NcclCallPlan& plan,
                                  const ReduceOp& reduce_op, int world) {
  if (plan.choice.algorithm == NcclAlgorithm::pat) return run_pat_chunks(comm, me, grad, plan, reduce_op, world);
  if (options_.collective == NcclCollective::reduce_scatter ||
      options_.collective == NcclCollective::all_gather)
    return run_ring_shard_chunks(comm, me, grad, plan, reduce_op, world);
  const NcclAlgorithm a = plan.choice.algorithm;
  const Protocol proto = plan.choice.protocol;
  if (a != NcclAlgorithm::ring && a != NcclAlgorithm::tree)
    throw std::logic_error("chunk-level movement runs ring and tree only");
  const bool math = grad.values.size() > 0;
  const std::int64_t n = grad.values.size();
  ChunkRun run{comm,
               me,
               plan,
               geometry(a, plan.choice.channels),
               costs_,
               NcclOp(reduce_op, world, options_.dtype),
               proto,
               plan.choice.channels,
               view_.size(),
               1 << 20,
               plan.chunking.slots,
               math,
               n,
               static_cast<std::int64_t>(grad.wire_elements),
               grad.values,
               math ? Eigen::VectorXf(n) : Eigen::VectorXf()};
  comm.pause_until(sg4::Engine::get_clock() + costs_.base(a, proto));
  std::vector<sg4::ActorPtr> actors;
  for (int c = 0; c < run.channels; ++c) {
    if (a == NcclAlgorithm::ring) {
      actors.push_back(start_ring_channel(run, c));
    } else {
      auto [up, down] = start_tree_channel(run, c);
      actors.push_back(up);
      actors.push_back(down);
    }
  }
  for (auto& actor : actors) actor->join();
  if (math && options_.collective == NcclCollective::all_reduce) grad.values = std::move(run.result);
}

// Channel c's ring: reduce-scatter then all-gather, slice by slice, NCCL's pieces in ring order.
sg4::ActorPtr NcclCommunicator::start_ring_channel(ChunkRun& run, int c) {
  const int me = run.me;
  return sg4::Actor::create(
      fmt::format("nccl-{}-ch{}", view_.rank_of(me), c), view_.host_of(me), [this, &run, c, me] {
        const int p = run.p, channels = run.channels, slices = run.plan.chunking.slices_per_chunk;
        const int loops = run.plan.loops;
        const std::int64_t parts = static_cast<std::int64_t>(loops) * channels * p;
        const auto& ring = run.g.rings[static_cast<std::size_t>(c)];
        const int q = run.g.position[static_cast<std::size_t>(c)][static_cast<std::size_t>(me)];
        const int prev = ring[static_cast<std::size_t>((q + p - 1) % p)],
                  next = ring[static_cast<std::size_t>((q + 1) % p)];
        const std::int64_t expected = static_cast<std::int64_t>(loops) * 2 * (p - 1) * slices;
        nccl_chunk::Inbox in(run.comm, view_.rank_of(prev), run.tag + c, run.slots, expected,
                             arrival_delay(prev, me, run.proto));
        nccl_chunk::Outbox out(run.comm, view_.host_of(me), view_.rank_of(next), run.tag + c, run.slots,
                               channel_rate(me, next));
        const bool math = run.math;
        const Eigen::VectorXf& x = run.x;
        for (int l = 0; l < loops; ++l) {
          // Slice j of piece k of this loop's channel share, on both planes.
          auto slice = [&](int k, int j) {
            const std::int64_t piece = (static_cast<std::int64_t>(l) * channels + c) * p + ((k % p) + p) % p;
            const Range pr = chunk_range(run.n, parts, piece), wr = chunk_range(run.w, parts, piece);
            const Range ps = chunk_range(pr.count, slices, j), ws = chunk_range(wr.count, slices, j);
            return std::pair<Range, std::int64_t>{Range{pr.begin + ps.begin, ps.count}, ws.count};
          };
          for (int j = 0; j < slices; ++j) {  // step 0: send my input's piece q - 1
            const auto [r, wires] = slice(q - 1, j);
            out.put(run.payload(math ? run.own(r) : Eigen::VectorXf(), wires));
          }
          for (int s = 2; s <= p; ++s)  // add my input and pass on, piece q - s; at s = p, piece q ends here
            for (int j = 0; j < slices; ++j) {
              const auto [r, wires] = slice(q - s, j);
              Payload got = in.take();
              if (math) {
                run.op.add_input(got.values, x.segment(r.begin, r.count));
                if (s == p) run.result.segment(r.begin, r.count) = got.values;
              }
              out.put(run.payload(std::move(got.values), wires));
            }
          for (int s = 1; s <= p - 1; ++s)  // pass the results on, keeping each; the last one stops here
            for (int j = 0; j < slices; ++j) {
              const auto [r, wires] = slice(q - s, j);
              Payload got = in.take();
              if (math) run.result.segment(r.begin, r.count) = got.values;
              if (s < p - 1) out.put(run.payload(std::move(got.values), wires));
            }
        }
        out.flush();
      });
}

// Channel c's tree: one actor reduces the pieces up to the root, another passes the results down.
std::pair<sg4::ActorPtr, sg4::ActorPtr> NcclCommunicator::start_tree_channel(ChunkRun& run, int c) {
  const int me = run.me, pieces = run.plan.loops, tag = run.tag, slots = run.slots;
  const Protocol proto = run.proto;
  const NcclTreeLinks links = run.g.tree[static_cast<std::size_t>(c)][static_cast<std::size_t>(me)];
  const Range cp = chunk_range(run.n, run.channels, c), cw = chunk_range(run.w, run.channels, c);
  auto piece = [cp, cw, pieces](int j) {
    const Range pr = chunk_range(cp.count, pieces, j), wr = chunk_range(cw.count, pieces, j);
    return std::pair<Range, std::int64_t>{Range{cp.begin + pr.begin, pr.count}, wr.count};
  };
  auto finals = sg4::Semaphore::create(0);  // pieces the root has finished, for its down actor
  auto up = sg4::Actor::create(
      fmt::format("nccl-{}-up{}", view_.rank_of(me), c), view_.host_of(me),
      [&run, this, c, me, tag, slots, pieces, proto, links, piece, finals] {
        const bool math = run.math;
        std::vector<std::unique_ptr<nccl_chunk::Inbox>> children;
        for (int child : links.children)
          children.push_back(std::make_unique<nccl_chunk::Inbox>(
              run.comm, view_.rank_of(child), tag + c, slots, pieces, arrival_delay(child, me, proto)));
        std::unique_ptr<nccl_chunk::Outbox> parent;
        if (links.parent >= 0)
          parent =
              std::make_unique<nccl_chunk::Outbox>(run.comm, view_.host_of(me), view_.rank_of(links.parent),
                                                   tag + c, slots, channel_rate(me, links.parent));
        for (int j = 0; j < pieces; ++j) {
          const auto [r, wires] = piece(j);
          Eigen::VectorXf acc = math ? run.own(r) : Eigen::VectorXf();
          for (auto& child : children) {
            Payload got = child->take();
            if (math) run.op.combine(acc, got.values);
          }
          if (parent) {
            parent->put(run.payload(std::move(acc), wires));
          } else {
            if (math) run.result.segment(r.begin, r.count) = acc;
            finals->release();
          }
        }
        if (parent) parent->flush();
      });
  auto down = sg4::Actor::create(fmt::format("nccl-{}-down{}", view_.rank_of(me), c), view_.host_of(me),
                                 [&run, this, c, me, tag, slots, pieces, proto, links, piece, finals] {
                                   const bool math = run.math;
                                   std::unique_ptr<nccl_chunk::Inbox> parent;
                                   if (links.parent >= 0)
                                     parent = std::make_unique<nccl_chunk::Inbox>(
                                         run.comm, view_.rank_of(links.parent), tag + c, slots, pieces,
                                         arrival_delay(links.parent, me, proto));
                                   std::vector<std::unique_ptr<nccl_chunk::Outbox>> children;
                                   for (int child : links.children)
                                     children.push_back(std::make_unique<nccl_chunk::Outbox>(
                                         run.comm, view_.host_of(me), view_.rank_of(child), tag + c, slots,
                                         channel_rate(me, child)));
                                   for (int j = 0; j < pieces; ++j) {
                                     const auto [r, wires] = piece(j);
                                     Eigen::VectorXf value;
                                     if (parent) {
                                       value = parent->take().values;
                                       if (math) run.result.segment(r.begin, r.count) = value;
                                     } else {
                                       finals->acquire();
                                       if (math) value = run.result.segment(r.begin, r.count);
                                     }
                                     for (auto& child : children) child->put(run.payload(value, wires));
                                   }
                                   for (auto& child : children) child->flush();
                                 });
  return {up, down};
}

}  // namespace aggsim
