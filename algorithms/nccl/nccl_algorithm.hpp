#pragma once
// One NCCL algorithm as the model sees it (NCCL keeps its graphs per algorithm, src/graph/rings.cc
// and trees.cc, apart from its movement per protocol, prims_*.h; aggsim does the same): the
// algorithm's geometry (who talks to whom on each channel, at which rates), its timing hooks for
// the flow level (the pipeline's own time and the streams a call runs), its call plan (NCCL's chunk
// and loops), its chunk-level schedule and its math (the order in which NCCL reduces). The movement
// engines (nccl_flow_engine.cpp, nccl_chunk_engine.cpp) and the communicator know an algorithm only
// through this interface and the table in nccl_algorithms.cpp (tests/layers/check_nccl_seams.py);
// README.md ("Adding an NCCL algorithm") says how to add one.
#include <Eigen/Core>
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <simgrid/s4u.hpp>
#include <unordered_map>
#include <vector>

#include "algorithms/nccl/nccl_communicator.hpp"
#include "algorithms/nccl/nccl_op.hpp"
#include "algorithms/nccl/nccl_view.hpp"
#include "algorithms/nccl/protocol.hpp"
#include "sim/api/partition.hpp"

namespace aggsim {

// Everything one call needs that depends only on the algorithm and channel count: who talks to
// whom on each channel, and each stream's nominal rate (its links' bandwidth shared equally by the
// call's streams on them) and route latency, for the dependency chain's estimate.
struct NcclGeometry {
  struct Edge {
    int from = 0, to = 0;
    double rate = 0;        // B/s: the narrowest link shared by all the call's streams on it
    double first_rate = 0;  // B/s: shared by the streams that move the pipeline's first piece with it
    double latency = 0;     // s, the route's
    LinkClass cls = LinkClass::network;
  };
  std::vector<std::vector<int>> rings;           // [channel][position] member
  std::vector<std::vector<int>> position;        // [channel][member] position
  std::vector<std::vector<Edge>> ring_out;       // [channel][position] edge to the next position
  std::vector<std::vector<NcclTreeLinks>> tree;  // [channel][member]
  std::vector<std::vector<Edge>> tree_up;        // [channel][member] edge to the parent (from < 0 at a root)
  std::vector<std::vector<Edge>> tree_down;      // [channel][member] edge from the parent
  std::vector<std::vector<Edge>> nvls_out;       // [channel][member] the member's switch traffic edge
  // An algorithm's own edges, where rings, trees and the switch do not describe it:
  // [channel][member x edges_per_member + k] member's k-th edge (PAT: its edge on dimension k).
  std::vector<std::vector<Edge>> own_out;
  int edges_per_member = 0;
  // Each stream's route, by (from, to) member pair.
  std::unordered_map<std::uint64_t, std::vector<const sg4::Link*>> routes;
  const std::vector<const sg4::Link*>& route(int from, int to, int members) const {
    return routes.at(static_cast<std::uint64_t>(from) * static_cast<std::uint64_t>(members) +
                     static_cast<std::uint64_t>(to));
  }
};

// Collects a geometry's edges as an algorithm lays them out, with the phase of each (streams of one
// phase move a pipeline's first piece together), then sets each edge's rates (finish).
class NcclGeometryBuilder {
 public:
  // `network_cap`: what one channel moves over a network connection, and out of a member along a
  // tree (bytes/s, 0: no bound).
  NcclGeometryBuilder(NcclGeometry& g, const NcclView& view, double network_cap = 0)
      : g_(g), view_(view), network_cap_(network_cap) {}
  NcclGeometry& geometry() { return g_; }
  // Adds an edge of the current phase: its route, latency and class.
  void add(NcclGeometry::Edge& e);
  // Adds the trees' edges (g.tree_up, g.tree_down), one phase per level (tree_levels).
  void add_tree_edges();
  // Each edge's share of its narrowest link, among all the call's streams and among its phase's,
  // at most the channel's network rate across the network.
  void finish();
  int phase = 0;

 private:
  NcclGeometry& g_;
  const NcclView& view_;
  double network_cap_ = 0;
  std::vector<NcclGeometry::Edge*> edges_;
  std::vector<std::vector<sg4::Link*>> routes_;
  std::vector<int> phases_;
  std::vector<double> cap_share_;  // per edge: its share of the channel's rate (0: not bound by it)
};

// NCCL's tree kernel (runTreeSplit, src/device/all_reduce.h) sends a channel's pieces up with one
// half of its threads and down with the other, which writes each piece once for every child: the
// share of the channel's rate (NcclCommunicator::channel_rate) an edge of the tree gets when
// `member` sends `up` to its parent, or down to one of its children.
double tree_send_share(const NcclGeometry& g, int channel, int member, bool up);
// Which of a channel's sends share its rate at flow level: a tree edge from `from` to `to` on
// `channel` is in its sender's up (0) or down (1) group, any other edge in none (-1).
int nccl_send_group(const NcclGeometry& g, int channel, int from, int to);

// How a call's streams and its pipeline's own time make its time.
enum class NcclCombine { later, pipeline, additive };
struct NcclChain {
  double time = 0;
  NcclCombine combine = NcclCombine::later;
};

// Receives a flow-level stream: `data_bytes` of the call's data from member `from` to `to` on
// channel `channel`, whose bytes cost the links `load_scale` times their count.
using NcclStreamSink =
    std::function<void(int from, int to, double data_bytes, int channel, double load_scale)>;

// The network's bandwidth factor for `bytes` over a hop of class `cls` (1 without a calibration).
inline double nccl_rate_factor(const BandwidthFactor& factor, LinkClass cls, double bytes) {
  return factor ? factor(cls != LinkClass::network, bytes) : 1.0;
}

// Pieces of a call's vectors: `parts` balanced pieces on both planes (proxy elements, fp32 wire
// elements), as every algorithm here cuts them.
struct Pieces {
  std::int64_t proxy = 0, wire = 0, parts = 1;
  Range proxy_range(std::int64_t i) const { return chunk_range(proxy, parts, i); }
  double data_bytes(std::int64_t i) const {
    return static_cast<double>(chunk_range(wire, parts, i).count) * 4;
  }
};

inline std::uint64_t wire_of(double data_bytes, Protocol p, const ProtocolCosts& costs) {
  return static_cast<std::uint64_t>(std::ceil(costs.wire_bytes(data_bytes, p)));
}

// Ring hops a piece crosses in one pass of the collective.
inline int ring_hops(NcclCollective coll, int p) {
  return coll == NcclCollective::all_reduce ? 2 * (p - 1) : p - 1;
}

// What the communicator knows that an algorithm's timing reads.
struct NcclContext {
  const NcclView& view;
  const NcclOptions& options;
  const ProtocolCosts& costs;
  const BandwidthFactor& bandwidth_factor;
};

struct NcclChunkCall;  // nccl_chunk_call.hpp

// One NCCL algorithm's geometry, flow-level timing, call plan and chunk-level schedule, on one
// communicator.
class NcclAlgorithmModel {
 public:
  using Geometry = NcclGeometry;
  explicit NcclAlgorithmModel(const NcclContext& context)
      : view_(context.view),
        options_(context.options),
        costs_(context.costs),
        bandwidth_factor_(context.bandwidth_factor) {}
  virtual ~NcclAlgorithmModel() = default;
  // Lays out the algorithm's edges on `channels` channels.
  virtual void build(NcclGeometryBuilder& b, int channels) const = 0;
  // The pipeline's own time from the streams' start, and how the streams' time combines with it.
  virtual NcclChain chain_time(const NcclCallPlan& plan, const NcclGeometry& g) const = 0;
  // Every stream of a call: what each channel edge carries in all.
  virtual void streams(const NcclCallPlan& plan, const NcclGeometry& g, std::int64_t wire_elements,
                       const NcclStreamSink& add) const = 0;
  // NCCL's chunk for a call, from the chunking the tuner sized (plan.chunking): the same unless the
  // algorithm sizes its own (NCCL's calcCollChunking does for some).
  virtual double chunk_bytes(const NcclCallPlan& plan) const { return plan.chunking.chunk_bytes; }
  // NCCL's loops for a call of plan.chunking's chunk, unbounded and counted in a double (an int cast
  // of a count beyond int's range is undefined): by default each loop moves a chunk per channel.
  virtual double loops(const NcclCallPlan& plan) const {
    return std::ceil(plan.data_bytes / plan.choice.channels / plan.chunking.chunk_bytes);
  }
  // Member call.me's part of a call at chunk level (movement: chunk): starts the actors that move
  // its pieces (call.start) and leaves what the member ends with in call.result. By default the
  // algorithm has none (a logic error: the algorithm's options refuse movement: chunk first).
  virtual void start_chunks(NcclChunkCall& call) const;
  // At flow level, whether a call of this plan moves piece by piece as at chunk level (start_chunks,
  // its pieces charging their routes' latency where they arrive, the same times): where this
  // algorithm's flow model is known to leave the chunk level (FLOW_MISSES.md), pieces of other
  // channels and levels crossing a link for part of a piece's time, which no share of a stream
  // sees. The communicator bounds the cost (chunk_messages). By default never.
  virtual bool flow_moves_piecewise(const NcclCallPlan&) const { return false; }
  // The messages the chunk level sends for a call of this plan, over all members and channels.
  virtual double chunk_messages(const NcclCallPlan&) const { return 0; }

 protected:
  // Loops in which every member moves a chunk per channel (a ring's, PAT's).
  double loops_per_member(const NcclCallPlan& plan) const {
    return std::ceil(plan.data_bytes / (static_cast<double>(plan.choice.channels) * view_.size() *
                                        plan.chunking.chunk_bytes));
  }
  double rate_factor(LinkClass cls, double bytes) const {
    return nccl_rate_factor(bandwidth_factor_, cls, bytes);
  }
  // A piece of `bytes` on an edge of that rate (alone with its phase's streams) and class, at the
  // rate the network gives a message of that size (a calibration's bandwidth factor), as the chunk
  // level sends it.
  double piece_time(double bytes, double rate, LinkClass cls) const {
    return bytes / (rate * rate_factor(cls, bytes));
  }

  const NcclView& view_;
  const NcclOptions& options_;
  const ProtocolCosts& costs_;
  const BandwidthFactor& bandwidth_factor_;
};

// The result of one all-reduce in NCCL's order (nccl_reduce), for one algorithm.
using NcclReduce = Eigen::VectorXf (*)(const NcclView& view, const NcclCallPlan& plan,
                                       const std::vector<const Eigen::VectorXf*>& inputs, const NcclOp& op);

// The result over each channel's share (balanced pieces of the vector, one per channel), as
// `reduce_channel(c, r)` computes channel c's over the range r of the vector.
template <class ReduceChannel>
Eigen::VectorXf nccl_reduce_per_channel(std::int64_t n, int channels, ReduceChannel reduce_channel) {
  Eigen::VectorXf out(n);
  const Pieces per_channel{n, 0, channels};
  for (int c = 0; c < channels; ++c) {
    const Range r = per_channel.proxy_range(c);
    if (r.count > 0) out.segment(r.begin, r.count) = reduce_channel(c, r);
  }
  return out;
}

// A reduce-scatter's result in NCCL's order (every member's shard at its place), for one algorithm.
using NcclReduceScatter = Eigen::VectorXf (*)(const NcclView& view, const NcclCallPlan& plan,
                                              const std::vector<const Eigen::VectorXf*>& inputs,
                                              const ReduceOp& op, int world, WireDtype dtype);

// What NCCL's choice sees of the platform for a communicator's calls, once the algorithm has said
// whether it runs their collective and op (NCCL turns an algorithm off for an op it cannot reduce).
using NcclSystemForCalls = NcclSystem (*)(NcclSystem system, const NcclOptions& options);

// The algorithm's own costs on a communicator, set once NCCL's system is known (a rate NCCL derives
// from the algorithm's graph on the platform), where no calibration fitted them.
using NcclCostsForCalls = void (*)(ProtocolCosts& costs, const NcclSystem& system, const NcclView& view,
                                   const NcclOptions& options);

// One row of the table of NCCL algorithms (nccl_algorithms.cpp). The last three may be null: no
// reduce-scatter by the algorithm; it runs every op; it has no costs of its own to set.
struct NcclAlgorithmRow {
  NcclAlgorithm algorithm;
  std::unique_ptr<NcclAlgorithmModel> (*make)(const NcclContext& context);
  NcclReduce reduce;
  NcclReduceScatter reduce_scatter = nullptr;
  NcclSystemForCalls system_for_calls = nullptr;
  NcclCostsForCalls costs_for_calls = nullptr;
};

// Every row, in the table's order.
const std::vector<NcclAlgorithmRow>& nccl_algorithm_rows();

// The row of algorithm `a` (throws std::logic_error for an algorithm without one).
const NcclAlgorithmRow& nccl_algorithm_row(NcclAlgorithm a);

}  // namespace aggsim
