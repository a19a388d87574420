#include "algorithms/nccl/nccl_communicator.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <stdexcept>
#include <tuple>
#include <unordered_map>

#include "algorithms/nccl/chunk_connection.hpp"
#include "algorithms/nccl/nccl_op.hpp"
#include "algorithms/nccl/nvls_shards.hpp"
#include "algorithms/nccl/pipeline_time.hpp"
#include "algorithms/nccl/ring_shards.hpp"
#include "sim/api/partition.hpp"
#include "sim/core/units.hpp"

XBT_LOG_NEW_DEFAULT_CATEGORY(aggsim_nccl, "aggsim's NCCL model");

namespace aggsim {

namespace {

// The communicator's channels: the init line's count or NCCL's own, within NCCL_MIN_NCHANNELS and
// NCCL_MAX_NCHANNELS.
int bounded_channels(const NcclOptions& o, int default_channels) {
  int channels = o.comm_channels.value_or(default_channels);
  if (o.min_channels) channels = std::max(channels, *o.min_channels);
  if (o.max_channels) channels = std::min(channels, *o.max_channels);
  return channels;
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

std::uint64_t wire_of(double data_bytes, Protocol p, const ProtocolCosts& costs) {
  return static_cast<std::uint64_t>(std::ceil(costs.wire_bytes(data_bytes, p)));
}

// Ring hops a piece crosses in one pass of the collective.
int ring_hops(NcclCollective coll, int p) {
  return coll == NcclCollective::all_reduce ? 2 * (p - 1) : p - 1;
}

}  // namespace

// Everything one call needs that depends only on the algorithm and channel count: who talks to
// whom on each channel, and each stream's nominal rate (its links' bandwidth shared equally by the
// call's streams on them) and route latency, for the dependency chain's estimate.
struct NcclCommunicator::Geometry {
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
  // Each stream's route, by (from, to) member pair.
  std::unordered_map<std::uint64_t, std::vector<const sg4::Link*>> routes;
  const std::vector<const sg4::Link*>& route(int from, int to, int members) const {
    return routes.at(static_cast<std::uint64_t>(from) * static_cast<std::uint64_t>(members) +
                     static_cast<std::uint64_t>(to));
  }
};

struct NcclCommunicator::Meeting {
  sg4::BarrierPtr barrier;
  std::vector<Gradient*> inputs;
  int left = 0;
  bool planned = false;
  double chain = 0;  // the pipeline's own time, from the streams' start (chain_time)
  Combine combine = Combine::later;
  double last_end = 0;  // the latest stream end of the call
  double last_hop = 0;  // the last hop's latency beyond the wire
  bool reduced = false;
  Eigen::VectorXf result;
  // Flow level: the call's streams, each member's outgoing and incoming ones, and the time the
  // busiest link needs for all it carries (every stream is paced to end then: a pipeline runs no
  // edge faster than its slowest).
  struct Stream {
    int from = 0, to = 0, channel = 0;
    std::uint64_t wire_bytes = 0;
    double load_scale = 1;  // NVLS: what its bytes cost the link, over the bytes (1 / nvls_efficiency)
    int merged = 1;         // the channels' streams of this pair it carries (merge_streams)
  };
  std::vector<Stream> streams;
  std::vector<std::vector<std::size_t>> out, in;  // by member: indices into streams
  double pace_time = 0;
  double stream_latency = 0;  // the longest route latency among the streams
};

NcclCommunicator::NcclCommunicator(const std::vector<int>& members, const std::vector<sg4::Host*>& hosts,
                                   NcclOptions options, ProtocolCosts costs, BandwidthFactor bandwidth_factor)
    : view_(members, hosts),
      options_(options),
      costs_(costs),
      bandwidth_factor_(std::move(bandwidth_factor)),
      channels_(options.channels.value_or(bounded_channels(options, view_.default_channels()))),
      tuning_(
          nvls_for_op(view_.system(channels_, options.arch), options.collective, options.nvls_reduces_op)),
      calls_made_(members.size(), 0) {
  // NCCL's own NVLS rate on Blackwell, from its NVLS graph on this platform, unless a calibration
  // fitted one.
  if (options.arch == GpuArch::blackwell && costs_.nvls_efficiency == kHopperNvlsEfficiency &&
      tuning_.system().nvls)
    costs_.nvls_efficiency = nccl_blackwell_nvls_port_share(tuning_.system(), view_.intra_bandwidth() / 1e9);
}

NcclCommunicator::~NcclCommunicator() = default;

double NcclCommunicator::rate_factor(LinkClass cls, double bytes) const {
  return bandwidth_factor_ ? bandwidth_factor_(cls != LinkClass::network, bytes) : 1.0;
}

// A piece of `bytes` on an edge of that rate (alone with its phase's streams) and class, at the rate the
// network gives a message of that size (a calibration's bandwidth factor), as the chunk level sends it.
double NcclCommunicator::piece_time(double bytes, double rate, LinkClass cls) const {
  return bytes / (rate * rate_factor(cls, bytes));
}

NcclCallPlan NcclCommunicator::plan(std::uint64_t wire_elements) const {
  NcclCallPlan plan;
  plan.data_bytes = static_cast<double>(wire_elements) * 4;
  plan.choice = tuning_.choose(options_.collective, plan.data_bytes, options_.algorithm, options_.protocol,
                               options_.channels);
  const int c = plan.choice.channels;
  plan.chunking =
      nccl_chunking(tuning_.system(), plan.choice.algorithm, plan.choice.protocol, plan.data_bytes, c);
  // Counted in a double: an int cast of a count beyond int's range is undefined.
  const double loops =
      plan.choice.algorithm == NcclAlgorithm::ring
          ? std::ceil(plan.data_bytes / (static_cast<double>(c) * view_.size() * plan.chunking.chunk_bytes))
          : std::ceil(plan.data_bytes / c / plan.chunking.chunk_bytes);
  plan.loops = static_cast<int>(std::clamp(loops, 1.0, static_cast<double>(kNcclMaxLoops) + 1));
  return plan;
}

std::string NcclCommunicator::size_refusal(std::uint64_t wire_elements) const {
  const NcclCallPlan p = plan(wire_elements);
  if (p.loops <= kNcclMaxLoops) return "";
  return fmt::format(
      "{}: a call of that size takes more than {} of NCCL's loops ({} {} on {} channels, pieces of {:.0f} "
      "B), and aggsim visits every loop of every channel",
      units::format_bytes(p.data_bytes), kNcclMaxLoops, nccl_algorithm_name(p.choice.algorithm),
      protocol_name(p.choice.protocol), p.choice.channels, p.chunking.chunk_bytes);
}

NcclCommunicator::Meeting& NcclCommunicator::join(int me) {
  const std::uint64_t id = calls_made_[static_cast<std::size_t>(me)]++;
  auto& slot = meetings_[id];
  if (!slot) {
    slot = std::make_unique<Meeting>();
    slot->barrier = sg4::Barrier::create(static_cast<unsigned>(view_.size()));
    slot->inputs.assign(static_cast<std::size_t>(view_.size()), nullptr);
  }
  return *slot;
}

void NcclCommunicator::leave(std::uint64_t id) {
  auto it = meetings_.find(id);
  if (it != meetings_.end() && ++it->second->left == view_.size()) meetings_.erase(it);
}

// Pieces cross a link together when their channels' rings look alike from their senders on (the
// same classes of hop at the same routes' latencies and bandwidths after them): so two channels
// leaving a node through one NIC at the same ring position share it, while a GPU's link, which
// every channel crosses at another position, carries one piece at a time. Returns each channel's
// group, numbered from 0 in the order they first appear.
std::vector<int> NcclCommunicator::ring_groups(const Geometry& g, int channels) const {
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

// NVLS-Tree between nodes: GPU l of each node carries shard l over the node tree.
void NcclCommunicator::nvls_node_trees(Geometry& g, int channels) const {
  const int p = view_.size();
  g.tree.resize(static_cast<std::size_t>(channels));
  g.tree_up.assign(static_cast<std::size_t>(channels),
                   std::vector<Geometry::Edge>(static_cast<std::size_t>(p)));
  g.tree_down = g.tree_up;
  const auto trees = double_binary_tree(view_.nodes());
  for (int c = 0; c < channels; ++c) {
    const NodeTree& t = trees[c < std::max(1, channels / 2) ? 0 : 1];
    g.tree[c].resize(static_cast<std::size_t>(p));
    for (int m = 0; m < p; ++m) {
      const int node = view_.node_of(m);
      const auto& nm = view_.node_members(node);
      const auto local = static_cast<std::size_t>(std::find(nm.begin(), nm.end(), m) - nm.begin());
      const auto at = [&](int other_node) {
        const auto& om = view_.node_members(other_node);
        return om[std::min(local, om.size() - 1)];
      };
      NcclTreeLinks links;
      const int up = t.parent[static_cast<std::size_t>(node)];
      links.parent = up < 0 ? -1 : at(up);
      for (int child : t.children[static_cast<std::size_t>(node)])
        if (child >= 0) links.children.push_back(at(child));
      g.tree[c][static_cast<std::size_t>(m)] = links;
      g.tree_up[c][static_cast<std::size_t>(m)] = {up < 0 ? -1 : m, links.parent};
      g.tree_down[c][static_cast<std::size_t>(m)] = {links.parent, up < 0 ? -1 : m};
    }
  }
}

namespace {

// Each stream's share of its narrowest link, among all the call's streams (rate) and among those of
// its phase (first_rate).
template <class Edge>
void set_rates(const std::vector<Edge*>& edges, const std::vector<std::vector<sg4::Link*>>& routes,
               const std::vector<int>& phases, int last_phase) {
  std::unordered_map<const sg4::Link*, int> load;
  std::vector<std::unordered_map<const sg4::Link*, int>> phase_load(static_cast<std::size_t>(last_phase + 1));
  for (std::size_t i = 0; i < routes.size(); ++i)
    for (const sg4::Link* l : routes[i]) {
      ++load[l];
      ++phase_load[static_cast<std::size_t>(phases[i])][l];
    }
  for (std::size_t i = 0; i < edges.size(); ++i) {
    double rate = std::numeric_limits<double>::infinity(), first = rate;
    for (const sg4::Link* l : routes[i]) {
      rate = std::min(rate, l->get_bandwidth() / load[l]);
      first = std::min(first, l->get_bandwidth() / phase_load[static_cast<std::size_t>(phases[i])][l]);
    }
    edges[i]->rate = rate;
    edges[i]->first_rate = first;
  }
}

}  // namespace

// Pieces cross links together when they are as far into the pipeline, in any channel's tree: up, a
// member sends once its children's pieces are in, as many hops after the start as the longest way
// up from the leaves below it (its height); down, as many hops after the root as its depth. The
// trees' edges, as (channel, member) of an edge to a parent (direction 0) or from one (1), by
// (direction, level).
std::map<std::pair<int, int>, std::vector<std::pair<int, int>>> NcclCommunicator::tree_levels(
    const Geometry& g) const {
  const int p = view_.size();
  std::map<std::pair<int, int>, std::vector<std::pair<int, int>>> together;
  for (std::size_t c = 0; c < g.tree.size(); ++c) {
    const auto& links = g.tree[c];
    std::vector<int> height(static_cast<std::size_t>(p), -1);
    const std::function<int(int)> height_of = [&](int x) {
      int& h = height[static_cast<std::size_t>(x)];
      if (h >= 0) return h;
      h = 0;
      for (int y : links[static_cast<std::size_t>(x)].children) h = std::max(h, height_of(y) + 1);
      return h;
    };
    for (int x = 0; x < p; ++x) {
      if (links[static_cast<std::size_t>(x)].parent < 0) continue;
      int depth = 0;
      for (int y = x; links[static_cast<std::size_t>(y)].parent >= 0;
           y = links[static_cast<std::size_t>(y)].parent)
        ++depth;
      together[{0, height_of(x)}].emplace_back(static_cast<int>(c), x);
      together[{1, depth}].emplace_back(static_cast<int>(c), x);
    }
  }
  return together;
}

const NcclCommunicator::Geometry& NcclCommunicator::geometry(NcclAlgorithm a, int channels) {
  auto& slot = geometries_[{static_cast<int>(a), channels}];
  if (slot) return *slot;
  slot = std::make_unique<Geometry>();
  Geometry& g = *slot;
  const int p = view_.size();
  // Every stream of a call, then each stream's share of its narrowest link.
  std::vector<Geometry::Edge*> edges;
  std::vector<std::vector<sg4::Link*>> routes;
  std::vector<int> phases;  // streams of one phase move a pipeline's first piece together
  int phase = 0;
  auto add = [&](Geometry::Edge& e) {
    std::vector<sg4::Link*> links;
    double latency = 0;
    view_.host_of(e.from)->route_to(view_.host_of(e.to), links, &latency);
    e.latency = latency;
    e.cls = view_.hop_class(e.from, e.to);
    edges.push_back(&e);
    g.routes[static_cast<std::uint64_t>(e.from) * static_cast<std::uint64_t>(p) +
             static_cast<std::uint64_t>(e.to)] = std::vector<const sg4::Link*>(links.begin(), links.end());
    routes.push_back(std::move(links));
    phases.push_back(phase);
  };
  auto add_tree_edges = [&] {
    for (const auto& [at, edges_at] : tree_levels(g)) {
      auto& list = at.first == 0 ? g.tree_up : g.tree_down;
      for (const auto& [c, x] : edges_at) add(list[static_cast<std::size_t>(c)][static_cast<std::size_t>(x)]);
      ++phase;
    }
  };
  if (a == NcclAlgorithm::ring) {
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
        phase = groups[static_cast<std::size_t>(c)] * p + q;
        add(g.ring_out[static_cast<std::size_t>(c)][static_cast<std::size_t>(q)]);
      }
    }
    phase = group_count * p;
  } else if (a == NcclAlgorithm::tree) {
    g.tree.resize(static_cast<std::size_t>(channels));
    g.tree_up.assign(static_cast<std::size_t>(channels),
                     std::vector<Geometry::Edge>(static_cast<std::size_t>(p)));
    g.tree_down = g.tree_up;
    for (int c = 0; c < channels; ++c)
      for (int m = 0; m < p; ++m) {
        g.tree[c].push_back(view_.tree_links(c, channels, m));
        const int parent = g.tree[c].back().parent;
        g.tree_up[c][static_cast<std::size_t>(m)] = {parent < 0 ? -1 : m, parent < 0 ? -1 : parent};
        g.tree_down[c][static_cast<std::size_t>(m)] = {parent < 0 ? -1 : parent, parent < 0 ? -1 : m};
      }
    add_tree_edges();
  } else {
    // NVLS: each GPU's switch traffic as a stream to the next GPU of its node (the same bytes on
    // each NVLink port, which is what the switch's in-line reduction and multicast cost it).
    g.nvls_out.resize(static_cast<std::size_t>(channels));
    for (int c = 0; c < channels; ++c) {
      auto& out = g.nvls_out[static_cast<std::size_t>(c)];
      out.resize(static_cast<std::size_t>(p));
      for (int n = 0; n < view_.nodes(); ++n) {
        const auto& nm = view_.node_members(n);
        for (std::size_t i = 0; i < nm.size(); ++i)
          out[static_cast<std::size_t>(nm[i])] = {nm[i], nm[(i + 1) % nm.size()]};
      }
      for (auto& e : out)
        if (e.from != e.to) add(e);
      ++phase;
    }
    if (a == NcclAlgorithm::nvls_tree) {
      nvls_node_trees(g, channels);
      add_tree_edges();
    }
  }
  set_rates(edges, routes, phases, phase);
  return g;
}

namespace {

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

}  // namespace

// The pipeline's own time from the streams' start, and how the streams' time combines with it.
// Ring, all-gather, reduce-scatter and trees: each channel's pieces timed as the chunk level moves
// them (pipeline_time.hpp), at the rates the call's own pieces leave each other; the streams add
// what other traffic takes from them. Broadcast's chain and NVLS: the first piece's way through
// (the fill), to which the streams' time for the other pieces adds.
NcclCommunicator::Chain NcclCommunicator::chain_time(const NcclCallPlan& plan, const Geometry& g) const {
  const NcclAlgorithm a = plan.choice.algorithm;
  if (a == NcclAlgorithm::ring && options_.collective == NcclCollective::broadcast)
    return {broadcast_fill(plan, g), Combine::additive};
  if (a == NcclAlgorithm::ring) return {ring_time(plan, g), Combine::later};
  if (a == NcclAlgorithm::tree) return {tree_time(plan, g), Combine::pipeline};
  return {nvls_fill(plan, g), Combine::additive};
}

// A chain from the root (member 0): the first piece crosses p - 1 hops, the others follow.
double NcclCommunicator::broadcast_fill(const NcclCallPlan& plan, const Geometry& g) const {
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
double NcclCommunicator::ring_time(const NcclCallPlan& plan, const Geometry& g) const {
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

// Every channel's tree as it runs piece by piece, the call's pieces on a link one after the
// other: channels whose trees cost alike are timed once, at the rates their pieces leave each
// other; then no link can carry all it carries in less than its bandwidth allows, from the first
// piece reaching it to the last piece leaving it with the rest of its way still to go (a member's
// links carry its children's pieces up and its parent's down at once).
double NcclCommunicator::tree_time(const NcclCallPlan& plan, const Geometry& g) const {
  const Protocol proto = plan.choice.protocol;
  const int c_count = plan.choice.channels, p = view_.size();
  const double piece =
      costs_.wire_bytes(plan.data_bytes / (static_cast<double>(c_count) * plan.loops), proto);
  const TreePipeline shape{plan.loops, plan.chunking.slots};
  std::map<std::vector<double>, std::pair<double, TreeTimes>> timed;  // by the trees' costs
  struct LinkUse {
    double work = 0, first = std::numeric_limits<double>::infinity(), tail = first;
  };
  std::unordered_map<const sg4::Link*, LinkUse> links;
  double worst = 0;
  for (int c = 0; c < c_count; ++c) {
    std::vector<TreeMember> members(static_cast<std::size_t>(p));
    std::vector<double> key;
    for (int x = 0; x < p; ++x) {
      TreeMember& me = members[static_cast<std::size_t>(x)];
      me.parent = g.tree[static_cast<std::size_t>(c)][static_cast<std::size_t>(x)].parent;
      me.children = g.tree[static_cast<std::size_t>(c)][static_cast<std::size_t>(x)].children;
      if (me.parent >= 0) {
        const auto& up = g.tree_up[static_cast<std::size_t>(c)][static_cast<std::size_t>(x)];
        const auto& down = g.tree_down[static_cast<std::size_t>(c)][static_cast<std::size_t>(x)];
        me.up = {up.latency + costs_.hop(up.cls, proto), piece_time(piece, up.first_rate, up.cls)};
        me.down = {down.latency + costs_.hop(down.cls, proto), piece_time(piece, down.first_rate, down.cls)};
      }
      key.push_back(me.parent);
      for (int y : me.children) key.push_back(y);
      key.insert(key.end(), {me.up.latency, me.up.slice_time, me.down.latency, me.down.slice_time});
    }
    auto found = timed.find(key);
    if (found == timed.end()) {
      TreeTimes times;
      const double t = tree_pipeline_time(members, shape, &times);
      found = timed.emplace(std::move(key), std::make_pair(t, std::move(times))).first;
    }
    const auto& [time, times] = found->second;
    worst = std::max(worst, time);
    for (int x = 0; x < p; ++x) {
      const int parent = members[static_cast<std::size_t>(x)].parent;
      if (parent < 0) continue;
      for (const auto& [from, to, moved] :
           {std::make_tuple(x, parent, times.up[static_cast<std::size_t>(x)]),
            std::make_tuple(parent, x, times.down[static_cast<std::size_t>(x)])})
        for (const sg4::Link* l : g.route(from, to, p)) {
          LinkUse& use = links[l];
          use.work +=
              plan.loops * piece / (l->get_bandwidth() * rate_factor(view_.hop_class(from, to), piece));
          use.first = std::min(use.first, moved.first_leaves);
          use.tail = std::min(use.tail, time - moved.last_arrives);
        }
    }
  }
  for (const auto& [link, use] : links) worst = std::max(worst, use.first + use.work + use.tail);
  return worst;
}

// NVLS: each GPU's share to the switch and back; NVLS-Tree adds the node tree, up and down.
double NcclCommunicator::nvls_fill(const NcclCallPlan& plan, const Geometry& g) const {
  const Protocol proto = plan.choice.protocol;
  const int c_count = plan.choice.channels, p = view_.size();
  auto hop = [&](const Geometry::Edge& e, double piece_bytes) {
    return piece_time(costs_.wire_bytes(piece_bytes, proto), e.first_rate, e.cls) + e.latency +
           costs_.hop(e.cls, proto);
  };
  const double piece = plan.data_bytes / (static_cast<double>(c_count) * plan.loops);
  double worst = 0;
  for (int c = 0; c < c_count; ++c) {
    double up = 0, down = 0;
    if (!g.tree_up.empty()) {
      const double shard = piece / std::max(1, view_.largest_node());
      for (int m = 0; m < p; ++m) {
        double cost_up = 0, cost_down = 0;
        for (int x = m; g.tree_up[c][static_cast<std::size_t>(x)].from >= 0;
             x = g.tree_up[c][static_cast<std::size_t>(x)].to) {
          cost_up += hop(g.tree_up[c][static_cast<std::size_t>(x)], shard);
          cost_down += hop(g.tree_down[c][static_cast<std::size_t>(x)], shard);
        }
        up = std::max(up, cost_up);
        down = std::max(down, cost_down);
      }
    }
    double intra = 0;
    const double per_port =
        piece * nvls_port_bytes_per_byte(options_.collective, view_.largest_node()) / costs_.nvls_efficiency;
    for (const auto& e : g.nvls_out[static_cast<std::size_t>(c)])
      if (e.from != e.to)
        intra =
            std::max(intra, piece_time(costs_.wire_bytes(per_port, proto), e.first_rate, e.cls) + e.latency);
    worst = std::max(worst, costs_.nvls_hop_latency_s + intra + up + down);
  }
  return worst;
}

void NcclCommunicator::run(Comm& comm, int me, Gradient& grad, const ReduceOp& op, int world,
                           CollectiveChoice* choice) {
  const NcclCallPlan plan = this->plan(grad.wire_elements);
  if (choice) {
    choice->nccl_algorithm = nccl_algorithm_name(plan.choice.algorithm);
    choice->protocol = protocol_name(plan.choice.protocol);
    choice->channels = plan.choice.channels;
  }
  const std::uint64_t id = calls_made_[static_cast<std::size_t>(me)];
  if (me == 0)
    ++calls_[fmt::format("{}/{}", nccl_algorithm_name(plan.choice.algorithm),
                         protocol_name(plan.choice.protocol))];
  if (view_.size() == 1) {
    // One rank: NCCL copies; the op still applies to the one input.
    if (grad.values.size() > 0 && options_.collective != NcclCollective::all_gather)
      NcclOp(op, world, options_.dtype).load(grad.values, Eigen::VectorXf(grad.values));
    else if (grad.values.size() > 0)
      round_to(grad.values, options_.dtype);
    return;
  }
  Meeting& m = join(me);
  m.inputs[static_cast<std::size_t>(me)] = &grad;
  if (options_.movement == Movement::chunk)
    run_chunks(comm, me, grad, plan, op, world);
  else
    run_flow(comm, me, grad, m, plan, op, world);
  leave(id);
}

// Every stream of a call: what each channel edge carries in all (ring: the pieces each member
// sends on; trees: every piece up and down each tree edge; NVLS: each GPU's switch traffic,
// S (1 + 1/g) each way, as a stream to the next GPU of its node), and the pace.
void NcclCommunicator::plan_streams(Meeting& m, const NcclCallPlan& plan, const Geometry& g,
                                    std::uint64_t wire_elements, bool traced) const {
  const NcclAlgorithm a = plan.choice.algorithm;
  const Protocol proto = plan.choice.protocol;
  const int channels = plan.choice.channels, p = view_.size();
  const auto w = static_cast<std::int64_t>(wire_elements);
  auto add = [&](int from, int to, double data_bytes, int c, double load_scale = 1) {
    if (data_bytes <= 0 || from == to) return;
    m.streams.push_back({from, to, c, wire_of(data_bytes, proto, costs_), load_scale});
  };
  if (a == NcclAlgorithm::ring) {
    const Pieces pieces{0, w, static_cast<std::int64_t>(plan.loops) * channels * p};
    for (int c = 0; c < channels; ++c)
      for (int q = 0; q < p; ++q) {
        const auto& e = g.ring_out[static_cast<std::size_t>(c)][static_cast<std::size_t>(q)];
        double bytes = 0;
        for (int l = 0; l < plan.loops; ++l) {
          const std::int64_t base = (static_cast<std::int64_t>(l) * channels + c) * p;
          auto chunk = [&](int k) { return pieces.data_bytes(base + ((k % p) + p) % p); };
          double all = 0;
          for (int k = 0; k < p; ++k) all += chunk(k);
          switch (options_.collective) {
            case NcclCollective::all_reduce:
              bytes += 2 * all - chunk(q) - chunk(q + 1);
              break;
            case NcclCollective::all_gather:
              bytes += all - chunk(q + 1);
              break;
            case NcclCollective::reduce_scatter:
              bytes += all - chunk(q);
              break;
            case NcclCollective::broadcast:
              if (e.to != 0) bytes += all;  // the chain from the root (member 0) stops before it
              break;
          }
        }
        add(e.from, e.to, bytes, c);
      }
  } else {
    const Pieces per_channel{0, w, channels};
    for (int c = 0; c < channels; ++c) {
      const double data = per_channel.data_bytes(c);
      for (int me = 0; me < p; ++me) {
        const auto node_gpus = static_cast<int>(view_.node_members(view_.node_of(me)).size());
        const double share = 1.0 / node_gpus;
        if (is_nvls(a)) {
          const auto& e = g.nvls_out[static_cast<std::size_t>(c)][static_cast<std::size_t>(me)];
          add(e.from, e.to, data * nvls_port_bytes_per_byte(options_.collective, node_gpus), c,
              1 / costs_.nvls_efficiency);
        }
        if (!g.tree_up.empty()) {
          const int parent = g.tree[static_cast<std::size_t>(c)][static_cast<std::size_t>(me)].parent;
          const double shard = is_nvls(a) ? data * share : data;
          if (parent >= 0) {
            add(me, parent, shard, c);  // up
            add(parent, me, shard, c);  // down
          }
        }
      }
    }
  }
  m.out.assign(static_cast<std::size_t>(p), {});
  m.in.assign(static_cast<std::size_t>(p), {});
  std::unordered_map<const sg4::Link*, double> load;
  for (std::size_t i = 0; i < m.streams.size(); ++i) {
    const auto& st = m.streams[i];
    m.out[static_cast<std::size_t>(st.from)].push_back(i);
    m.in[static_cast<std::size_t>(st.to)].push_back(i);
    double latency = 0;
    // The network gives the stream its links' rate times its bandwidth factor (a calibration's):
    // paced at the bare rate, a factor above 1 would speed nothing up.
    const double wire = static_cast<double>(st.wire_bytes);
    const double cost = wire * st.load_scale / rate_factor(view_.hop_class(st.from, st.to), wire);
    for (const sg4::Link* l : g.route(st.from, st.to, p)) {
      load[l] += cost;
      latency += l->get_latency();
    }
    m.stream_latency = std::max(m.stream_latency, latency);
  }
  const sg4::Link* busiest = nullptr;
  for (const auto& [link, bytes] : load)
    if (bytes / link->get_bandwidth() > m.pace_time) {
      m.pace_time = bytes / link->get_bandwidth();
      busiest = link;
    }
  if (busiest)
    XBT_VERB("%zu streams, busiest link %s: %.9g s for %.0f bytes", m.streams.size(), busiest->get_cname(),
             m.pace_time, load[busiest]);
  if (options_.merge_streams && !(options_.merge_unless_traced && traced)) merge_streams(m);
}

// The channels' streams between one pair of members start together on one route at one pace, so
// one stream carrying all their bytes at the sum of their rates stands for them (rates the network
// grants in full end each at the same moment; see merge_streams in README).
void NcclCommunicator::merge_streams(Meeting& m) const {
  std::unordered_map<std::uint64_t, std::size_t> first;  // (from, to) -> index in merged
  std::vector<Meeting::Stream> merged;
  const auto p = static_cast<std::uint64_t>(view_.size());
  for (const auto& st : m.streams) {
    const std::uint64_t key = static_cast<std::uint64_t>(st.from) * p + static_cast<std::uint64_t>(st.to);
    const auto [it, fresh] = first.emplace(key, merged.size());
    if (fresh) {
      merged.push_back(st);
      continue;
    }
    auto& into = merged[it->second];
    into.wire_bytes += st.wire_bytes;
    into.merged += st.merged;
  }
  m.streams = std::move(merged);
  m.out.assign(static_cast<std::size_t>(view_.size()), {});
  m.in.assign(static_cast<std::size_t>(view_.size()), {});
  for (std::size_t i = 0; i < m.streams.size(); ++i) {
    m.out[static_cast<std::size_t>(m.streams[i].from)].push_back(i);
    m.in[static_cast<std::size_t>(m.streams[i].to)].push_back(i);
  }
}

void NcclCommunicator::run_flow(Comm& comm, int me, Gradient& grad, Meeting& m, const NcclCallPlan& plan,
                                const ReduceOp& op, int world) {
  const NcclAlgorithm a = plan.choice.algorithm;
  const Protocol proto = plan.choice.protocol;
  const int channels = plan.choice.channels;
  // Every member has called: the pipeline runs from the last arrival. A replayed call takes its
  // times from the step it repeats, so it skips this meeting (a synchronisation of every rank);
  // the one after the streams, which the reduction needs, stays.
  if (!comm.replaying()) m.barrier->wait();
  const double start = sg4::Engine::get_clock() + costs_.base(a, proto);
  const Geometry& g = geometry(a, channels);
  if (!m.planned) {
    m.planned = true;
    const Chain chain = chain_time(plan, g);
    m.chain = chain.time;
    m.combine = chain.combine;
    m.last_end = start;
  }
  comm.pause_until(start);
  if (m.streams.empty() && m.out.empty()) plan_streams(m, plan, g, grad.wire_elements, comm.tracer() != nullptr);
  // Each member receives its incoming streams and sends its outgoing ones.
  std::vector<SendHandle> sends;
  std::vector<RecvHandle> receives;
  const int tag = 1 << 20;  // streams' channel numbers, apart from any message of the rank
  for (std::size_t i : m.in[static_cast<std::size_t>(me)]) {
    const auto& st = m.streams[i];
    receives.push_back(comm.accept_stream(view_.rank_of(st.from), tag + st.channel));
  }
  for (std::size_t i : m.out[static_cast<std::size_t>(me)]) {
    const auto& st = m.streams[i];
    const double rate = m.pace_time > 0 ? static_cast<double>(st.wire_bytes) / m.pace_time : 0;
    sends.push_back(comm.start_stream(view_.rank_of(st.to), st.wire_bytes, tag + st.channel, rate, st.merged));
    m.last_hop = std::max(m.last_hop, costs_.hop(view_.hop_class(st.from, st.to), proto));
  }
  for (auto& r : receives) {
    double arrived = 0;
    r.wait(&arrived);
    m.last_end = std::max(m.last_end, arrived);
  }
  for (auto& s : sends) m.last_end = std::max(m.last_end, s.wait());
  m.barrier->wait();  // every stream of the call has ended
  const double streams_end = m.last_end + m.last_hop;
  if (me == 0)
    XBT_VERB("%s/%s, %d channels, %d loops: start %.9g, chain %.9g, streams end %.9g (+%.3g)",
             nccl_algorithm_name(a), protocol_name(proto), channels, plan.loops, start, m.chain, m.last_end,
             m.last_hop);
  // The streams' time beyond their pace: what other traffic took from them.
  const double busy = std::max(m.pace_time, m.last_end - start - m.stream_latency);
  const double rest = 1 - 1.0 / plan.loops;  // the pieces after the first
  switch (m.combine) {
    case Combine::later:  // every edge busy from the start: whichever ends later
      comm.pause_until(std::max(start + m.chain, streams_end));
      break;
    case Combine::pipeline:  // the pipeline's own time, slowed as much as other traffic slowed its streams
      comm.pause_until(std::max(start + m.chain + (busy - m.pace_time) * rest, streams_end));
      break;
    case Combine::additive:  // the first piece's way, then the others at the busiest link's pace
      comm.pause_until(std::max(start + m.chain + busy * rest, streams_end));
      break;
  }
  if (options_.collective == NcclCollective::broadcast || grad.values.size() == 0) return;
  if (!m.reduced) {
    std::vector<const Eigen::VectorXf*> inputs;
    for (const Gradient* in : m.inputs) inputs.push_back(&in->values);
    m.result =
        options_.collective == NcclCollective::all_reduce
            ? nccl_reduce(view_, plan, inputs, op, world, options_.dtype)
            : nccl_shard_collective(view_, plan, options_.collective, inputs, op, world, options_.dtype);
    m.reduced = true;
  }
  grad.values = m.result;
  if (options_.collective == NcclCollective::reduce_scatter) keep_shard(grad.values, view_.size(), me);
}

Eigen::VectorXf nccl_reduce(const NcclView& view, const NcclCallPlan& plan,
                            const std::vector<const Eigen::VectorXf*>& inputs, const ReduceOp& reduce_op,
                            int world, WireDtype dtype) {
  const NcclOp op(reduce_op, world, dtype);
  const int p = view.size(), channels = plan.choice.channels;
  const std::int64_t n = inputs.front()->size();
  Eigen::VectorXf out(n);
  const auto x = [&](int member) -> const Eigen::VectorXf& {
    return *inputs[static_cast<std::size_t>(member)];
  };
  const NcclAlgorithm a = plan.choice.algorithm;
  if (a == NcclAlgorithm::ring) {
    // Piece k of a loop's channel share is reduced around the channel's ring from position k + 1.
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
  const Pieces per_channel{n, 0, channels};
  const auto trees = double_binary_tree(view.nodes());
  for (int c = 0; c < channels; ++c) {
    const Range r = per_channel.proxy_range(c);
    if (r.count == 0) continue;
    if (a == NcclAlgorithm::tree) {
      // Up the channel's tree: each member adds its children's partial results to its own input.
      std::function<Eigen::VectorXf(int)> up = [&](int m) {
        Eigen::VectorXf acc(r.count);
        op.load(acc, x(m).segment(r.begin, r.count));
        for (int child : view.tree_links(c, channels, m).children) op.combine(acc, up(child));
        return acc;
      };
      int root = 0;
      while (view.tree_links(c, channels, root).parent >= 0) root = view.tree_links(c, channels, root).parent;
      out.segment(r.begin, r.count) = up(root);
      continue;
    }
    // NVLS: the switch adds the node's GPUs in local order; NVLS-Tree then adds the nodes' sums up
    // the node tree (each node its sum plus its children's, in tree order).
    std::vector<Eigen::VectorXf> node_sum(static_cast<std::size_t>(view.nodes()));
    for (int nd = 0; nd < view.nodes(); ++nd) {
      const auto& nm = view.node_members(nd);
      auto& acc = node_sum[static_cast<std::size_t>(nd)];
      acc.resize(r.count);
      op.load(acc, x(nm[0]).segment(r.begin, r.count));
      for (std::size_t i = 1; i < nm.size(); ++i) op.add_input(acc, x(nm[i]).segment(r.begin, r.count));
    }
    if (a == NcclAlgorithm::nvls) {
      out.segment(r.begin, r.count) = node_sum[0];
      continue;
    }
    const NodeTree& t = trees[c < std::max(1, channels / 2) ? 0 : 1];
    std::function<Eigen::VectorXf(int)> up = [&](int nd) {
      Eigen::VectorXf acc = node_sum[static_cast<std::size_t>(nd)];
      for (int child : t.children[static_cast<std::size_t>(nd)])
        if (child >= 0) op.combine(acc, up(child));
      return acc;
    };
    const int root = static_cast<int>(std::find(t.parent.begin(), t.parent.end(), -1) - t.parent.begin());
    out.segment(r.begin, r.count) = up(root);
  }
  return out;
}

namespace {

using nccl_chunk::Inbox;
using nccl_chunk::Outbox;

}  // namespace

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
        Inbox in(run.comm, view_.rank_of(prev), run.tag + c, run.slots, expected,
                 arrival_delay(prev, me, run.proto));
        Outbox out(run.comm, view_.host_of(me), view_.rank_of(next), run.tag + c, run.slots);
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
        std::vector<std::unique_ptr<Inbox>> children;
        for (int child : links.children)
          children.push_back(std::make_unique<Inbox>(run.comm, view_.rank_of(child), tag + c, slots, pieces,
                                                     arrival_delay(child, me, proto)));
        std::unique_ptr<Outbox> parent;
        if (links.parent >= 0)
          parent = std::make_unique<Outbox>(run.comm, view_.host_of(me), view_.rank_of(links.parent), tag + c,
                                            slots);
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
                                   std::unique_ptr<Inbox> parent;
                                   if (links.parent >= 0)
                                     parent = std::make_unique<Inbox>(run.comm, view_.rank_of(links.parent),
                                                                      tag + c, slots, pieces,
                                                                      arrival_delay(links.parent, me, proto));
                                   std::vector<std::unique_ptr<Outbox>> children;
                                   for (int child : links.children)
                                     children.push_back(std::make_unique<Outbox>(
                                         run.comm, view_.host_of(me), view_.rank_of(child), tag + c, slots));
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
