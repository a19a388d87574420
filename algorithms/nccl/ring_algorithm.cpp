// NCCL's ring (NCCL 2.21.5, src/graph/rings.cc; src/device/all_reduce.h runRing): on each channel
// the members in the channel's ring order, every piece passed from each member to the next.
#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <tuple>

#include "algorithms/nccl/nccl_algorithm.hpp"
#include "algorithms/nccl/nccl_chunk_call.hpp"
#include "algorithms/nccl/pipeline_time.hpp"
#include "algorithms/nccl/ring_shards.hpp"

namespace aggsim {

namespace {

// Channels from which a one-loop LL128 ring moves piece by piece at flow level (flow_moves_piecewise):
// up to 12, every case of FLOW_MISSES.md's 2 x 8 GPU table is within 5 %.
constexpr int kRingPiecewiseChannels = 12;

// Largest sum of `hops` consecutive weights on a ring, over the start positions in `starts`
// (all when empty).
double longest_run(const std::vector<double>& w, int hops, const std::vector<int>& starts = {}) {
  const int p = static_cast<int>(w.size());
  std::vector<double> prefix(static_cast<std::size_t>(2 * p + hops + 1), 0);
  for (int i = 0; i < 2 * p + hops; ++i)
    prefix[static_cast<std::size_t>(i + 1)] =
        prefix[static_cast<std::size_t>(i)] + w[static_cast<std::size_t>(i % p)];
  double best = 0;
  auto run = [&](int s) {
    best = std::max(best, prefix[static_cast<std::size_t>(s + hops)] - prefix[static_cast<std::size_t>(s)]);
  };
  if (starts.empty())
    for (int s = 0; s < p; ++s) run(s);
  else
    for (int s : starts) run(s);
  return best;
}

// Channel c's ring at chunk level: reduce-scatter then all-gather, slice by slice, NCCL's pieces in
// ring order.
void start_ring_channel(NcclChunkCall& run, int c) {
  const int me = run.me;
  run.start(fmt::format("nccl-{}-ch{}", run.view.rank_of(me), c), [&run, c, me] {
    const int p = run.p, channels = run.channels, slices = run.plan.chunking.slices_per_chunk;
    const int loops = run.plan.loops;
    const std::int64_t parts = static_cast<std::int64_t>(loops) * channels * p;
    const auto& ring = run.g.rings[static_cast<std::size_t>(c)];
    const int q = run.g.position[static_cast<std::size_t>(c)][static_cast<std::size_t>(me)];
    const int prev = ring[static_cast<std::size_t>((q + p - 1) % p)],
              next = ring[static_cast<std::size_t>((q + 1) % p)];
    const std::int64_t expected = static_cast<std::int64_t>(loops) * 2 * (p - 1) * slices;
    nccl_chunk::Inbox in(run.comm, run.view.rank_of(prev), run.tag + c, run.slots, expected,
                         run.arrival_delay(prev, me));
    nccl_chunk::Outbox out(run.comm, run.view.host_of(me), run.view.rank_of(next), run.tag + c, run.slots,
                           run.channel_rate(me, next));
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

class RingAlgorithm : public NcclAlgorithmModel {
 public:
  using NcclAlgorithmModel::NcclAlgorithmModel;

  void build(NcclGeometryBuilder& b, int channels) const override {
    Geometry& g = b.geometry();
    const int p = view_.size();
    g.rings.resize(static_cast<std::size_t>(channels));
    g.position.assign(static_cast<std::size_t>(channels), std::vector<int>(static_cast<std::size_t>(p), 0));
    g.ring_out.resize(static_cast<std::size_t>(channels));
    for (int c = 0; c < channels; ++c) {
      g.rings[c] = view_.ring(c);
      auto& out = g.ring_out[static_cast<std::size_t>(c)];
      out.resize(static_cast<std::size_t>(p));
      for (int q = 0; q < p; ++q) {
        g.position[c][static_cast<std::size_t>(g.rings[c][static_cast<std::size_t>(q)])] = q;
        out[static_cast<std::size_t>(q)] = {g.rings[c][static_cast<std::size_t>(q)],
                                            g.rings[c][static_cast<std::size_t>((q + 1) % p)]};
      }
    }
    const std::vector<int> groups = ring_groups(g, channels);
    int group_count = 0;
    for (int c = 0; c < channels; ++c) {
      group_count = std::max(group_count, groups[static_cast<std::size_t>(c)] + 1);
      for (int q = 0; q < p; ++q) {
        b.phase = groups[static_cast<std::size_t>(c)] * p + q;
        b.add(g.ring_out[static_cast<std::size_t>(c)][static_cast<std::size_t>(q)]);
      }
    }
    b.phase = group_count * p;
  }

  // Ring, all-gather and reduce-scatter: each channel's pieces timed as the chunk level moves them
  // (pipeline_time.hpp), at the rates the call's own pieces leave each other; the streams add what
  // other traffic takes from them. Broadcast's chain: the first piece's way through (the fill), to
  // which the streams' time for the other pieces adds.
  NcclChain chain_time(const NcclCallPlan& plan, const Geometry& g) const override {
    if (options_.collective == NcclCollective::broadcast)
      return {broadcast_fill(plan, g), NcclCombine::additive};
    return {ring_time(plan, g), NcclCombine::later};
  }

  // The pieces each member sends on, over every loop.
  // Each loop moves a chunk of every member's piece on each channel.
  double loops(const NcclCallPlan& plan) const override { return loops_per_member(plan); }
  // One LL128 loop on many channels moves piece by piece at flow level: every channel sends a slice
  // at every step, and a GPU's link carries the other channels' slices for part of a slice's time,
  // which the phase's shares miss by up to 12 % (16 channels, FLOW_MISSES.md).
  bool flow_moves_piecewise(const NcclCallPlan& plan) const override {
    return plan.loops <= 1 && plan.choice.channels >= kRingPiecewiseChannels &&
           plan.choice.protocol == Protocol::ll128 &&
           options_.collective != NcclCollective::broadcast;  // which the chunk level does not move
  }
  // A slice from every member at every step of every loop and channel.
  double chunk_messages(const NcclCallPlan& plan) const override {
    return static_cast<double>(plan.choice.channels) * view_.size() * ring_hops(options_.collective, view_.size()) *
           plan.chunking.slices_per_chunk * plan.loops;
  }

  // Each channel's ring; a reduce-scatter's or an all-gather's shards go round it (ring_shards.cpp).
  void start_chunks(NcclChunkCall& call) const override {
    if (call.collective == NcclCollective::reduce_scatter || call.collective == NcclCollective::all_gather)
      return start_ring_shard_chunks(call);
    for (int c = 0; c < call.channels; ++c) start_ring_channel(call, c);
  }

  // The pieces each member sends on, over every loop. A loop's pieces are sized once for all the
  // members (summing them per member made a call's plan quadratic in the ranks).
  void streams(const NcclCallPlan& plan, const Geometry& g, std::int64_t w,
               const NcclStreamSink& add) const override {
    const int channels = plan.choice.channels, p = view_.size();
    const Pieces pieces{0, w, static_cast<std::int64_t>(plan.loops) * channels * p};
    const auto at = [p](int k) { return static_cast<std::size_t>(k % p); };
    std::vector<double> chunk(static_cast<std::size_t>(p)), bytes(static_cast<std::size_t>(p));
    for (int c = 0; c < channels; ++c) {
      std::fill(bytes.begin(), bytes.end(), 0.0);
      for (int l = 0; l < plan.loops; ++l) {
        const std::int64_t base = (static_cast<std::int64_t>(l) * channels + c) * p;
        double all = 0;
        for (int k = 0; k < p; ++k) {
          chunk[static_cast<std::size_t>(k)] = pieces.data_bytes(base + k);
          all += chunk[static_cast<std::size_t>(k)];
        }
        for (int q = 0; q < p; ++q) {
          double& b = bytes[static_cast<std::size_t>(q)];
          switch (options_.collective) {
            case NcclCollective::all_reduce:
              b += 2 * all - chunk[at(q)] - chunk[at(q + 1)];
              break;
            case NcclCollective::all_gather:
              b += all - chunk[at(q + 1)];
              break;
            case NcclCollective::reduce_scatter:
              b += all - chunk[at(q)];
              break;
            case NcclCollective::broadcast:
              // The chain from the root (member 0) stops before it.
              if (g.ring_out[static_cast<std::size_t>(c)][static_cast<std::size_t>(q)].to != 0) b += all;
              break;
          }
        }
      }
      for (int q = 0; q < p; ++q) {
        const auto& e = g.ring_out[static_cast<std::size_t>(c)][static_cast<std::size_t>(q)];
        add(e.from, e.to, bytes[static_cast<std::size_t>(q)], c, 1);
      }
    }
  }

 private:
  std::vector<int> ring_groups(const Geometry& g, int channels) const;
  double broadcast_fill(const NcclCallPlan& plan, const Geometry& g) const;
  double ring_time(const NcclCallPlan& plan, const Geometry& g) const;
};

}  // namespace

// Pieces cross a link together when their channels' rings look alike from their senders on (the
// same classes of hop at the same routes' latencies and bandwidths after them): so two channels
// leaving a node through one NIC at the same ring position share it, while a GPU's link, which
// every channel crosses at another position, carries one piece at a time. Returns each channel's
// group, numbered from 0 in the order they first appear.
std::vector<int> RingAlgorithm::ring_groups(const Geometry& g, int channels) const {
  std::map<std::vector<std::tuple<int, double, double>>, int> patterns;
  std::vector<int> groups;
  for (int c = 0; c < channels; ++c) {
    std::vector<std::tuple<int, double, double>> pattern;
    for (const auto& e : g.ring_out[static_cast<std::size_t>(c)]) {
      std::vector<sg4::Link*> links;
      double latency = 0;
      view_.host_of(e.from)->route_to(view_.host_of(e.to), links, &latency);
      double narrowest = std::numeric_limits<double>::infinity();
      for (const sg4::Link* l : links) narrowest = std::min(narrowest, l->get_bandwidth());
      pattern.emplace_back(static_cast<int>(view_.hop_class(e.from, e.to)), latency, narrowest);
    }
    groups.push_back(patterns.emplace(std::move(pattern), static_cast<int>(patterns.size())).first->second);
  }
  return groups;
}

// A chain from the root (member 0): the first piece crosses p - 1 hops, the others follow.
double RingAlgorithm::broadcast_fill(const NcclCallPlan& plan, const Geometry& g) const {
  const Protocol proto = plan.choice.protocol;
  const int c_count = plan.choice.channels, p = view_.size(), m = plan.chunking.slices_per_chunk;
  const double slice = plan.data_bytes / (static_cast<double>(plan.loops) * c_count * p * m);
  double worst = 0;
  for (int c = 0; c < c_count; ++c) {
    std::vector<double> w;
    double slowest = 0;
    for (const auto& e : g.ring_out[static_cast<std::size_t>(c)]) {
      w.push_back(piece_time(costs_.wire_bytes(slice, proto), e.first_rate, e.cls) + e.latency +
                  costs_.hop(e.cls, proto));
      slowest = std::max(slowest, costs_.wire_bytes(slice, proto) / e.rate);
    }
    const double pass = longest_run(w, ring_hops(options_.collective, p), {g.position[c][0]});
    worst = std::max(worst, plan.loops * (pass + (m - 1) * slowest));
  }
  return worst;
}

// Every channel's ring as it runs slice by slice; channels whose rings cost alike are timed once.
double RingAlgorithm::ring_time(const NcclCallPlan& plan, const Geometry& g) const {
  const Protocol proto = plan.choice.protocol;
  const int c_count = plan.choice.channels, p = view_.size();
  RingPipeline shape;
  shape.steps = ring_hops(options_.collective, p);
  shape.slices = plan.chunking.slices_per_chunk;
  shape.loops = plan.loops;
  shape.slots = plan.chunking.slots;
  const double slice = plan.data_bytes / (static_cast<double>(plan.loops) * c_count * p * shape.slices);
  std::set<std::vector<std::pair<double, double>>> timed;
  double worst = 0;
  for (int c = 0; c < c_count; ++c) {
    std::vector<PipelineHop> hops;
    std::vector<std::pair<double, double>> key;
    for (const auto& e : g.ring_out[static_cast<std::size_t>(c)]) {
      hops.push_back({e.latency + costs_.hop(e.cls, proto),
                      piece_time(costs_.wire_bytes(slice, proto), e.first_rate, e.cls)});
      key.emplace_back(hops.back().latency, hops.back().slice_time);
    }
    if (timed.insert(std::move(key)).second) worst = std::max(worst, ring_pipeline_time(hops, shape));
  }
  return worst;
}

std::unique_ptr<NcclAlgorithmModel> make_ring_algorithm(const NcclContext& context) {
  return std::make_unique<RingAlgorithm>(context);
}

// Piece k of a loop's channel share is reduced around the channel's ring from position k + 1.
Eigen::VectorXf nccl_ring_reduce(const NcclView& view, const NcclCallPlan& plan,
                                 const std::vector<const Eigen::VectorXf*>& inputs, const NcclOp& op) {
  const int p = view.size(), channels = plan.choice.channels;
  const std::int64_t n = inputs.front()->size();
  Eigen::VectorXf out(n);
  const auto x = [&](int member) -> const Eigen::VectorXf& {
    return *inputs[static_cast<std::size_t>(member)];
  };
  const Pieces pieces{n, 0, static_cast<std::int64_t>(plan.loops) * channels * p};
  for (int l = 0; l < plan.loops; ++l)
    for (int c = 0; c < channels; ++c) {
      const std::vector<int> ring = view.ring(c);
      for (int k = 0; k < p; ++k) {
        const Range r = pieces.proxy_range((static_cast<std::int64_t>(l) * channels + c) * p + k);
        if (r.count == 0) continue;
        auto acc = out.segment(r.begin, r.count);
        op.load(acc, x(ring[static_cast<std::size_t>((k + 1) % p)]).segment(r.begin, r.count));
        for (int j = 2; j <= p; ++j)
          op.add_input(acc, x(ring[static_cast<std::size_t>((k + j) % p)]).segment(r.begin, r.count));
      }
    }
  return out;
}

}  // namespace aggsim
