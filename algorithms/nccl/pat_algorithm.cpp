// NCCL's PAT in the communicator's table of algorithms (nccl_algorithm.hpp): its geometry (an edge
// per dimension from each member), its pipeline's own time (NCCL's steps, pat_schedule.hpp) and its
// streams. Its math is a reduce-scatter's (nccl_pat_reduce_scatter); NCCL runs no all-reduce by PAT.
#include <stdexcept>

#include "algorithms/nccl/nccl_algorithm.hpp"
#include "algorithms/nccl/pat_call.hpp"
#include "algorithms/nccl/pat_schedule.hpp"

namespace aggsim {

namespace {

// Loops (each a piece from every member to every other, p (p - 1) messages a channel) up to which
// a flow-level call moves piece by piece (flow_moves_piecewise; FLOW_MISSES.md).
constexpr int kPatPiecewiseLoops = 4;

class PatAlgorithm final : public NcclAlgorithmModel {
 public:
  using NcclAlgorithmModel::NcclAlgorithmModel;

  // An edge per dimension from each member (to member + 2^d, or - 2^d for an all-gather). Pieces of
  // one dimension move together: each edge's share of its links is among theirs and the other
  // channels'; how a member's own pieces share its first and last links is pat_pipeline_time's.
  void build(NcclGeometryBuilder& b, int channels) const override {
    NcclGeometry& g = b.geometry();
    const int p = view_.size();
    while ((1 << g.edges_per_member) < p) ++g.edges_per_member;
    g.own_out.assign(static_cast<std::size_t>(channels),
                     std::vector<NcclGeometry::Edge>(static_cast<std::size_t>(p * g.edges_per_member)));
    for (int d = 0; d < g.edges_per_member; ++d, ++b.phase)
      for (int m = 0; m < p; ++m)
        for (int c = 0; c < channels; ++c) {
          auto& e =
              g.own_out[static_cast<std::size_t>(c)][static_cast<std::size_t>(m * g.edges_per_member + d)];
          e = {m, pat_peer(options_.collective, m, d, true, p)};
          b.add(e);
        }
  }

  // Every member's walk of NCCL's steps. Every channel has the same edges and channel 0 the largest
  // pieces: it is the one timed.
  NcclChain chain_time(const NcclCallPlan& plan, const NcclGeometry& g) const override {
    const int p = view_.size(), channels = plan.choice.channels, loops = plan.loops;
    const auto w = static_cast<std::int64_t>(std::llround(plan.data_bytes / 4));
    const double piece = plan.data_bytes / (static_cast<double>(p) * channels * loops);
    const auto hop = [&](int member, int dim) {
      const auto& e = g.own_out[0][static_cast<std::size_t>(member * g.edges_per_member + dim)];
      const double factor = rate_factor(e.cls, piece);
      const auto& route = g.route(e.from, e.to, p);
      PatHop h{1 / (e.first_rate * factor), e.latency + costs_.hop(e.cls, Protocol::simple)};
      h.out_link = route.empty() ? static_cast<const void*>(&e) : route.front();
      h.in_link = route.empty() ? static_cast<const void*>(&e.to) : route.back();
      h.out_rate = route.empty() ? e.first_rate * factor : route.front()->get_bandwidth() * factor / channels;
      h.in_rate = route.empty() ? e.first_rate * factor : route.back()->get_bandwidth() * factor / channels;
      return h;
    };
    const auto bytes = [&](int member, int node, int loop) {
      const double data =
          4.0 * static_cast<double>(pat_piece(w, p, (member + node) % p, channels, loops, 0, loop).count);
      return costs_.wire_bytes(data, Protocol::simple);
    };
    const auto steps = pat_steps(options_.collective, p, pat_call_aggregation(plan, p));
    return {pat_pipeline_time(options_.collective, steps, p, loops, plan.chunking.slots, hop, bytes),
            NcclCombine::later};
  }

  // NCCL sizes PAT's chunk from each rank's part of a channel (pat_chunk_bytes).
  double chunk_bytes(const NcclCallPlan& plan) const override {
    return pat_chunk_bytes(options_.collective, plan.data_bytes / plan.choice.channels);
  }
  // Each loop moves a chunk of every member's shard on each channel.
  double loops(const NcclCallPlan& plan) const override { return loops_per_member(plan); }
  void start_chunks(NcclChunkCall& call) const override { start_pat_chunks(call); }
  // A call of a few loops moves piece by piece at flow level: every member's piece of a loop is on
  // the network at once with the others', which the dimension's streams share unevenly.
  bool flow_moves_piecewise(const NcclCallPlan& plan) const override { return plan.loops <= kPatPiecewiseLoops; }
  // A piece from every member to every other a loop and channel.
  double chunk_messages(const NcclCallPlan& plan) const override {
    return static_cast<double>(plan.choice.channels) * view_.size() * (view_.size() - 1) * plan.loops;
  }

  // Every piece a member sends on a dimension, over all loops.
  void streams(const NcclCallPlan& plan, const NcclGeometry& g, std::int64_t w,
               const NcclStreamSink& add) const override {
    const int p = view_.size(), channels = plan.choice.channels;
    const auto steps = pat_steps(options_.collective, p, pat_call_aggregation(plan, p));
    for (int c = 0; c < channels; ++c)
      for (int m = 0; m < p; ++m) {
        std::vector<double> per_dim(static_cast<std::size_t>(g.edges_per_member), 0);
        for (int l = 0; l < plan.loops; ++l)
          for (const PatStep& s : steps)
            if (s.send_dim >= 0)
              per_dim[static_cast<std::size_t>(s.send_dim)] +=
                  4.0 *
                  static_cast<double>(pat_piece(w, p, (m + s.node) % p, channels, plan.loops, c, l).count);
        for (int d = 0; d < g.edges_per_member; ++d) {
          const auto& e =
              g.own_out[static_cast<std::size_t>(c)][static_cast<std::size_t>(m * g.edges_per_member + d)];
          add(e.from, e.to, per_dim[static_cast<std::size_t>(d)], c, 1);
        }
      }
  }
};

}  // namespace

std::unique_ptr<NcclAlgorithmModel> make_pat_algorithm(const NcclContext& context) {
  return std::make_unique<PatAlgorithm>(context);
}

// PAT's reduce-scatter in NCCL's steps' order, at the call's aggregation.
Eigen::VectorXf pat_call_reduce_scatter(const NcclView& view, const NcclCallPlan& plan,
                                        const std::vector<const Eigen::VectorXf*>& inputs, const ReduceOp& op,
                                        int world, WireDtype dtype) {
  return nccl_pat_reduce_scatter(pat_call_aggregation(plan, view.size()), inputs, op, world, dtype);
}

// PAT off for a reduce-scatter whose op it does not run (pat_for_op).
NcclSystem pat_system_for_calls(NcclSystem system, const NcclOptions& options) {
  return pat_for_op(system, options.collective, options.pat_reduces_op);
}

Eigen::VectorXf nccl_pat_reduce(const NcclView&, const NcclCallPlan&,
                                const std::vector<const Eigen::VectorXf*>&, const NcclOp&) {
  throw std::logic_error("NCCL runs no all-reduce by PAT");
}

}  // namespace aggsim
