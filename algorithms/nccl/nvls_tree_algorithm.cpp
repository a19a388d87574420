// NCCL's NVLS-Tree (NCCL 2.21.5, src/graph/connect.cc connectNvls with the trees of trees.cc;
// src/device/all_reduce.h runNvlsTree): NVLS inside each node, and between nodes GPU l of each
// node carries shard l over the double binary tree of the nodes.
#include <algorithm>
#include <functional>

#include "algorithms/nccl/nvls_algorithm.hpp"

namespace aggsim {

namespace {

class NvlsTreeAlgorithm : public NvlsAlgorithm {
 public:
  using NvlsAlgorithm::NvlsAlgorithm;

  void build(NcclGeometryBuilder& b, int channels) const override {
    NvlsAlgorithm::build(b, channels);
    nvls_node_trees(b.geometry(), channels);
    b.add_tree_edges();
  }

 private:
  void nvls_node_trees(Geometry& g, int channels) const;
};

}  // namespace

// NVLS-Tree between nodes: GPU l of each node carries shard l over the node tree.
void NvlsTreeAlgorithm::nvls_node_trees(Geometry& g, int channels) const {
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

std::unique_ptr<NcclAlgorithmModel> make_nvls_tree_algorithm(const NcclContext& context) {
  return std::make_unique<NvlsTreeAlgorithm>(context);
}

// The switch adds each node's GPUs in local order, then the nodes' sums go up the node tree (each
// node its sum plus its children's, in tree order).
Eigen::VectorXf nccl_nvls_tree_reduce(const NcclView& view, const NcclCallPlan& plan,
                                      const std::vector<const Eigen::VectorXf*>& inputs, const NcclOp& op) {
  const int channels = plan.choice.channels;
  const auto trees = double_binary_tree(view.nodes());
  return nccl_reduce_per_channel(inputs.front()->size(), channels, [&](int c, const Range& r) {
    const std::vector<Eigen::VectorXf> node_sum = nccl_nvls_node_sums(view, r, inputs, op);
    const NodeTree& t = trees[c < std::max(1, channels / 2) ? 0 : 1];
    std::function<Eigen::VectorXf(int)> up = [&](int nd) {
      Eigen::VectorXf acc = node_sum[static_cast<std::size_t>(nd)];
      for (int child : t.children[static_cast<std::size_t>(nd)])
        if (child >= 0) op.combine(acc, up(child));
      return acc;
    };
    const int root = static_cast<int>(std::find(t.parent.begin(), t.parent.end(), -1) - t.parent.begin());
    return up(root);
  });
}

}  // namespace aggsim
