// Hierarchical all-reduce for multi-GPU nodes: ring reduce-scatter among the g ranks of each node,
// all-reduce of each rank's shard (S/g) among the ranks with the same local index on every node
// (with the algorithm `inter`), ring all-gather inside the node. Nodes come from the rank layout
// (host property `aggsim_node`); every node must hold the same number of ranks. With N nodes,
// intra-node alpha_i, beta_i and an inter-node path whose bandwidth the g concurrent shards share:
//   2 (g-1) (alpha_i + (S/g) beta_i) + T_inter(N, S/g),
// where T_inter is the chosen algorithm's cost on the shard. A rank's local index is its position
// among its node's ranks in rank order; nodes are ordered by their first rank.
// Assumes a commutative, associative op.
//
// SMPI: no single equivalent (allreduce:mvapich_two_level and the smp_* variants reduce to a
// leader per node instead of sharding across all local ranks).
#include <fmt/format.h>

#include <map>
#include <memory>
#include <utility>

#include "algorithms/collectives/allreduce.hpp"
#include "algorithms/collectives/ring.hpp"
#include "algorithms/nccl/nccl_communicator.hpp"
#include "algorithms/registry.hpp"

namespace aggsim {

namespace {

GroupAllreduce inter_algorithm(const std::string& name, int chunks) {
  if (name == "halving_doubling") return halving_doubling_allreduce;
  if (name == "recursive_doubling") return recursive_doubling_allreduce;
  if (name == "tree") return with_chunks(tree_allreduce, chunks);
  if (name == "double_binary_tree") return with_chunks(double_binary_tree_allreduce, chunks);
  return ring_allreduce;
}

// Ranks of each node (nodes by first rank); every rank its own node without a layout. Throws
// ParamError (on the algorithm's name) describing the layout when nodes hold different numbers of ranks.
std::vector<std::vector<int>> ranks_by_node(const RankLayout* layout, int world) {
  std::vector<std::vector<int>> nodes;
  std::map<int, std::size_t> index_of_node;
  for (int r = 0; r < world; ++r) {
    const int node =
        layout && !layout->node_of_rank.empty() ? layout->node_of_rank.at(static_cast<std::size_t>(r)) : r;
    auto it = index_of_node.emplace(node, nodes.size()).first;
    if (it->second == nodes.size()) nodes.emplace_back();
    nodes[it->second].push_back(r);
  }
  for (const auto& n : nodes) {
    if (n.size() == nodes.front().size()) continue;
    std::string layout_text;
    for (std::size_t i = 0; i < nodes.size(); ++i)
      layout_text += fmt::format("{}node {}: {} rank(s)", i ? ", " : "", i, nodes[i].size());
    throw ParamError("name",
                     fmt::format("hierarchical_allreduce needs the same number of ranks on every node "
                                 "(host property aggsim_node); rank layout: {}",
                                 layout_text));
  }
  return nodes;
}

// inter: nccl. One NCCL communicator per local index, over the ranks of that index on every node
// (as NCCL would build it for the shards), each choosing algorithm, protocol and channels per
// call with NCCL's model and moving at flow level. Made on the first call, once hosts are known.
class NcclAcrossNodes {
 public:
  NcclAcrossNodes(std::vector<std::vector<int>> nodes, const std::vector<sg4::Host*>& hosts,
                  const ProtocolCosts& costs, const BandwidthFactor& bandwidth_factor) {
    const std::size_t g = nodes.empty() ? 0 : nodes.front().size();
    for (std::size_t i = 0; i < g; ++i) {
      std::vector<int> members;
      for (const auto& node : nodes) members.push_back(node[i]);
      comms_.push_back(
          std::make_shared<NcclCommunicator>(members, hosts, NcclOptions{}, costs, bandwidth_factor));
      local_index_of_.emplace(members.front(), i);
    }
  }
  GroupAllreduce allreduce() {
    return [this](Comm& comm, const Group& across, Gradient& g, const ReduceOp& op, int world) {
      NcclCommunicator& c = *comms_.at(local_index_of_.at(across.rank_at(0)));
      c.run(comm, across.me, g, op, world, nullptr);
    };
  }
  int channels() const { return comms_.empty() ? 0 : comms_.front()->channels(); }
  // Why a call of `wire_elements` (at most the whole gradient) cannot be simulated, or "".
  std::string size_refusal(std::uint64_t wire_elements) const {
    return comms_.empty() ? "" : comms_.front()->size_refusal(wire_elements);
  }

 private:
  std::vector<std::shared_ptr<NcclCommunicator>> comms_;
  std::map<int, std::size_t> local_index_of_;  // by the first node's rank of that index
};

// Each rank's node and its position there, computed once for all ranks: found rank by rank, it
// would cost O(p) per rank and aggregator (p^2 in all).
struct NodeTable {
  std::vector<std::vector<int>> nodes;     // ranks of each node, nodes by first rank
  std::vector<std::pair<int, int>> place;  // by rank: {node index, local index}

  NodeTable(const RankLayout* layout, int world) : nodes(ranks_by_node(layout, world)) {
    place.resize(static_cast<std::size_t>(world));
    for (std::size_t n = 0; n < nodes.size(); ++n)
      for (std::size_t i = 0; i < nodes[n].size(); ++i)
        place[static_cast<std::size_t>(nodes[n][i])] = {static_cast<int>(n), static_cast<int>(i)};
  }
};

// Where the ranks of one node hand their shards to the node's first rank, which runs the g
// inter-node rings as one (node_flows: merged). A rank aggregates its buckets one after another,
// and no rank leaves a meeting before all have arrived, so one meeting a node serves every bucket.
struct NodeMeeting {
  sg4::BarrierPtr barrier;  // made by the first rank to arrive (SimGrid objects need the engine)
  ShardBundle bundle;       // by local index
};

// Whether the run merges each node's inter-node rings into one (node_flows). Throws ParamError when
// `merged` is asked for and refused.
bool merge_node_flows(const AlgorithmConfig& cfg, const NodeTable& table) {
  const std::string mode = cfg.params.text("node_flows");
  if (mode == "separate") return false;
  std::string why;
  if (cfg.params.text("inter") != "ring")
    why = fmt::format("the inter-node rings are merged, and inter is {}, not ring", cfg.params.text("inter"));
  else if (table.nodes.size() < 2 || table.nodes.front().size() < 2)
    return false;  // one ring per node pair already: nothing to merge
  else if (cfg.merged_node_flows_refusal())
    why = cfg.merged_node_flows_refusal()(table.nodes);
  else
    return false;  // the scenario is loading: the platform is checked when the run is prepared
  if (why.empty()) return true;
  if (mode == "merged")
    throw ParamError("node_flows",
                     "merged: one flow per node would not take the time of separate flows here: " + why +
                         " (use separate, or auto, which falls back to it)");
  return false;
}

class HierarchicalAllreduce final : public Aggregator {
 public:
  HierarchicalAllreduce(ReduceOp op, GroupAllreduce inter, std::shared_ptr<const NodeTable> table,
                        std::shared_ptr<std::vector<NodeMeeting>> meetings)
      : op_(op), inter_(std::move(inter)), table_(std::move(table)), meetings_(std::move(meetings)) {}

  void aggregate(RankContext& ctx, Gradient& grad) override {
    if (local_.empty()) build_groups(ctx);
    if (!meetings_ || local_.size() == 1) {
      two_level_allreduce(*ctx.comm, local_, across_, grad, op_, ctx.world, inter_);
      return;
    }
    // node_flows: merged. The same steps as two_level_allreduce with a ring between nodes, but the
    // node's first rank carries every local rank's shard in each inter-node message.
    ring_reduce_scatter(*ctx.comm, local_, grad, op_);
    const ChunkView owned = chunk_of(grad, local_.size(), ring_owned_chunk(local_.me, local_.size()));
    Gradient shard = flat_gradient(grad.values.segment(owned.proxy.begin, owned.proxy.count),
                                   static_cast<std::uint64_t>(owned.wire.count));
    NodeMeeting& meeting = (*meetings_)[static_cast<std::size_t>(node_)];
    if (!meeting.barrier) {
      const auto g = static_cast<std::size_t>(local_.size());
      meeting.barrier = sg4::Barrier::create(static_cast<unsigned>(g));
      meeting.bundle.shards.resize(g);
      meeting.bundle.comms.resize(g);
      meeting.bundle.hosts.resize(g);
    }
    const auto me = static_cast<std::size_t>(local_.me);
    meeting.bundle.shards[me] = &shard;
    meeting.bundle.comms[me] = ctx.comm;
    meeting.bundle.hosts[me] = ctx.host;
    meeting.barrier->wait();
    if (local_.me == 0) bundled_ring_allreduce(*ctx.comm, across_, meeting.bundle, op_, ctx.world);
    meeting.barrier->wait();
    grad.values.segment(owned.proxy.begin, owned.proxy.count) = shard.values;
    ring_allgather(*ctx.comm, local_, grad);
  }

 private:
  void build_groups(const RankContext& ctx) {
    const auto [node, index] = table_->place.at(static_cast<std::size_t>(ctx.rank));
    local_ = Group(table_->nodes[static_cast<std::size_t>(node)], index);
    for (const auto& other : table_->nodes) across_.add(other[static_cast<std::size_t>(index)]);
    across_.me = node;
    node_ = node;
  }

  ReduceOp op_;
  GroupAllreduce inter_;
  std::shared_ptr<const NodeTable> table_;
  std::shared_ptr<std::vector<NodeMeeting>> meetings_;  // null: one ring per local index
  Group local_, across_;
  int node_ = 0;
};

}  // namespace

AlgorithmInfo hierarchical_allreduce_entry() {
  AlgorithmInfo info;
  info.name = "hierarchical_allreduce";
  info.messages_per_rank_step = [](int p) { return 2 * log2_rounds(p); };
  info.summary = "intra-node reduce-scatter, inter-node all-reduce of each shard, intra-node all-gather";
  info.params = {
      ParamSpec("inter", ParamKind::choice, "ring",
                "inter-node all-reduce of each shard (nccl: NCCL's ring or tree, protocol and channels "
                "chosen per call as nccl_allreduce does, at flow level)")
          .one_of({"ring", "halving_doubling", "recursive_doubling", "tree", "double_binary_tree", "nccl"}),
      ParamSpec("inter_chunks", ParamKind::integer, "1",
                "pipelining pieces when inter is tree or double_binary_tree")
          .between(1, 1 << 20),
      ParamSpec("node_flows", ParamKind::choice, "auto",
                "inter-node rings simulated as one transfer per local rank (separate) or as one per node "
                "carrying every local rank's shard (merged: g times fewer transfers, the same results; "
                "refused where the platform or network would time one flow otherwise); auto: merged "
                "where allowed, else separate")
          .one_of({"auto", "separate", "merged"})};
  info.reduces_in_flight = true;
  info.consensus = true;
  // Calibrated by factor steps; with inter: nccl its NCCL stage also takes NCCL's fitted costs.
  info.calibration.reads_model_parameters = [](const Params& p) {
    return p.has("inter") && p.text("inter") == "nccl";
  };
  info.prepare = [](const AlgorithmConfig& cfg) {
    // Throws when the platform's nodes hold unequal shares.
    auto table = std::make_shared<const NodeTable>(cfg.layout(), cfg.world);
    const bool merged = merge_node_flows(cfg, *table);
    auto meetings = merged ? std::make_shared<std::vector<NodeMeeting>>(table->nodes.size()) : nullptr;
    std::shared_ptr<NcclAcrossNodes> nccl;
    if (cfg.params.text("inter") == "nccl" && cfg.hosts())
      nccl = std::make_shared<NcclAcrossNodes>(table->nodes, *cfg.hosts(), protocol_costs_of(cfg.calibration),
                                               cfg.bandwidth_factor());
    if (nccl)
      if (const std::string why = nccl->size_refusal((cfg.model_bytes + 3) / 4); !why.empty())
        throw ParamError("model.size", why);
    AlgorithmRun run = independent_ranks(cfg, [table, meetings, nccl](const AlgorithmConfig& c) {
      const int inter_chunks = static_cast<int>(c.params.integer("inter_chunks"));
      GroupAllreduce inter = nccl ? nccl->allreduce() : inter_algorithm(c.params.text("inter"), inter_chunks);
      return std::make_unique<HierarchicalAllreduce>(c.op, std::move(inter), table, meetings);
    });
    run.summary_fields = [merged] {
      return std::vector<SummaryField>{{"node_flows_merged", merged ? 1.0 : 0.0}};
    };
    return run;
  };
  return info;
}

}  // namespace aggsim
