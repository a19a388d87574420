// NCCL's tree (NCCL 2.21.5, src/graph/trees.cc; src/device/all_reduce.h runTreeUpDown): on each
// channel one of the two double binary trees over the nodes, a chain inside each node; pieces are
// reduced up to the root and the results passed down.
#include <algorithm>
#include <functional>
#include <limits>
#include <map>
#include <tuple>

#include "algorithms/nccl/nccl_algorithm.hpp"
#include "algorithms/nccl/pipeline_time.hpp"

namespace aggsim {

namespace {

class TreeAlgorithm : public NcclAlgorithmModel {
 public:
  using NcclAlgorithmModel::NcclAlgorithmModel;

  void build(NcclGeometryBuilder& b, int channels) const override {
    Geometry& g = b.geometry();
    const int p = view_.size();
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
    b.add_tree_edges();
  }

  NcclChain chain_time(const NcclCallPlan& plan, const Geometry& g) const override {
    return {tree_time(plan, g), NcclCombine::pipeline};
  }

  // Every piece up and down each tree edge.
  void streams(const NcclCallPlan& plan, const Geometry& g, std::int64_t w,
               const NcclStreamSink& add) const override {
    const int channels = plan.choice.channels, p = view_.size();
    const Pieces per_channel{0, w, channels};
    for (int c = 0; c < channels; ++c) {
      const double data = per_channel.data_bytes(c);
      for (int me = 0; me < p; ++me) {
        const int parent = g.tree[static_cast<std::size_t>(c)][static_cast<std::size_t>(me)].parent;
        if (parent >= 0) {
          add(me, parent, data, c, 1);  // up
          add(parent, me, data, c, 1);  // down
        }
      }
    }
  }

 private:
  double tree_time(const NcclCallPlan& plan, const Geometry& g) const;
};

}  // namespace

// Every channel's tree as it runs piece by piece, the call's pieces on a link one after the
// other: channels whose trees cost alike are timed once, at the rates their pieces leave each
// other; then no link can carry all it carries in less than its bandwidth allows, from the first
// piece reaching it to the last piece leaving it with only that piece's own way still to go (a
// member's links carry its children's pieces up and its parent's down; link_bound).
double TreeAlgorithm::tree_time(const NcclCallPlan& plan, const Geometry& g) const {
  const Protocol proto = plan.choice.protocol;
  const int c_count = plan.choice.channels, p = view_.size();
  const double piece =
      costs_.wire_bytes(plan.data_bytes / (static_cast<double>(c_count) * plan.loops), proto);
  const TreePipeline shape{plan.loops, plan.chunking.slots};
  std::map<std::vector<double>, std::pair<double, TreeTimes>> timed;  // by the trees' costs
  std::unordered_map<const sg4::Link*, std::vector<LinkJob>> links;
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
          links[l].push_back(
              {moved.first_leaves,
               plan.loops * piece / (l->get_bandwidth() * rate_factor(view_.hop_class(from, to), piece)),
               moved.rest});
        }
    }
  }
  for (auto& [link, jobs] : links) worst = std::max(worst, link_bound(jobs));
  return worst;
}

std::unique_ptr<NcclAlgorithmModel> make_tree_algorithm(const NcclContext& context) {
  return std::make_unique<TreeAlgorithm>(context);
}

// Up each channel's tree: each member adds its children's partial results to its own input.
Eigen::VectorXf nccl_tree_reduce(const NcclView& view, const NcclCallPlan& plan,
                                 const std::vector<const Eigen::VectorXf*>& inputs, const NcclOp& op) {
  const int channels = plan.choice.channels;
  return nccl_reduce_per_channel(inputs.front()->size(), channels, [&](int c, const Range& r) {
    std::function<Eigen::VectorXf(int)> up = [&](int m) {
      Eigen::VectorXf acc(r.count);
      op.load(acc, inputs[static_cast<std::size_t>(m)]->segment(r.begin, r.count));
      for (int child : view.tree_links(c, channels, m).children) op.combine(acc, up(child));
      return acc;
    };
    int root = 0;
    while (view.tree_links(c, channels, root).parent >= 0) root = view.tree_links(c, channels, root).parent;
    return up(root);
  });
}

}  // namespace aggsim
