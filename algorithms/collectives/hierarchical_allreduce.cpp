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

#include "algorithms/collectives/allreduce.hpp"
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

class HierarchicalAllreduce final : public Aggregator {
 public:
  HierarchicalAllreduce(ReduceOp op, GroupAllreduce inter) : op_(op), inter_(std::move(inter)) {}

  void aggregate(RankContext& ctx, Gradient& grad) override {
    if (local_.empty()) build_groups(ctx);
    two_level_allreduce(*ctx.comm, local_, across_, grad, op_, ctx.world, inter_);
  }

 private:
  void build_groups(const RankContext& ctx) {
    const auto nodes = ranks_by_node(ctx.layout, ctx.world);
    for (std::size_t n = 0; n < nodes.size(); ++n)
      for (std::size_t i = 0; i < nodes[n].size(); ++i)
        if (nodes[n][i] == ctx.rank) {
          local_ = Group(nodes[n], static_cast<int>(i));
          for (const auto& other : nodes) across_.add(other[i]);
          across_.me = static_cast<int>(n);
        }
  }

  ReduceOp op_;
  GroupAllreduce inter_;
  Group local_, across_;
};

}  // namespace

AlgorithmInfo hierarchical_allreduce_entry() {
  AlgorithmInfo info;
  info.name = "hierarchical_allreduce";
  info.summary = "intra-node reduce-scatter, inter-node all-reduce of each shard, intra-node all-gather";
  info.params = {
      ParamSpec("inter", ParamKind::choice, "ring", "inter-node all-reduce of each shard")
          .one_of({"ring", "halving_doubling", "recursive_doubling", "tree", "double_binary_tree"}),
      ParamSpec("inter_chunks", ParamKind::integer, "1",
                "pipelining pieces when inter is tree or double_binary_tree")
          .between(1, 1 << 20)};
  info.reduces_in_flight = true;
  info.consensus = true;
  info.prepare = [](const AlgorithmConfig& cfg) {
    if (cfg.layout) ranks_by_node(cfg.layout, cfg.world);  // the platform's nodes must hold equal shares
    return independent_ranks(cfg, [](const AlgorithmConfig& c) {
      const int inter_chunks = static_cast<int>(c.params.integer("inter_chunks"));
      return std::make_unique<HierarchicalAllreduce>(c.op,
                                                     inter_algorithm(c.params.text("inter"), inter_chunks));
    });
  };
  return info;
}

}  // namespace aggsim
