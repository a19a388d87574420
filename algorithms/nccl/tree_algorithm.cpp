// NCCL's tree (NCCL 2.21.5, src/graph/trees.cc; src/device/all_reduce.h runTreeUpDown): on each
// channel one of the two double binary trees over the nodes, a chain inside each node; pieces are
// reduced up to the root and the results passed down.
#include <algorithm>
#include <functional>
#include <limits>
#include <map>
#include <tuple>

#include "algorithms/nccl/nccl_algorithm.hpp"
#include "algorithms/nccl/nccl_chunk_call.hpp"
#include "algorithms/nccl/pipeline_time.hpp"

namespace aggsim {

namespace {

// At flow level a tree call of at most this many pieces a channel moves piece by piece
// (flow_moves_piecewise): with so few pieces, the other tree's and the other levels' pieces cross a
// link for part of a piece's time, which the pipeline's shares miss by up to 18 %; from 54 pieces
// up every generated case is within 5 % (FLOW_MISSES.md).
constexpr int kTreePiecewiseLoops = 50;

// Channel c's tree at chunk level: one actor reduces the pieces up to the root, another passes the
// results down, each sending at the channel's rate, the down one shared by its children
// (tree_send_share).
void start_tree_channel(NcclChunkCall& run, int c) {
  const int me = run.me, pieces = run.plan.loops, tag = run.tag, slots = run.slots;
  const NcclTreeLinks links = run.g.tree[static_cast<std::size_t>(c)][static_cast<std::size_t>(me)];
  const Range cp = chunk_range(run.n, run.channels, c), cw = chunk_range(run.w, run.channels, c);
  auto piece = [cp, cw, pieces](int j) {
    const Range pr = chunk_range(cp.count, pieces, j), wr = chunk_range(cw.count, pieces, j);
    return std::pair<Range, std::int64_t>{Range{cp.begin + pr.begin, pr.count}, wr.count};
  };
  auto finals = sg4::Semaphore::create(0);  // pieces the root has finished, for its down actor
  run.start(fmt::format("nccl-{}-up{}", run.view.rank_of(me), c),
            [&run, c, me, tag, slots, pieces, links, piece, finals] {
              const bool math = run.math;
              std::vector<std::unique_ptr<nccl_chunk::Inbox>> children;
              for (int child : links.children)
                children.push_back(std::make_unique<nccl_chunk::Inbox>(
                    run.comm, run.view.rank_of(child), tag + c, slots, pieces, run.arrival_delay(child, me)));
              std::unique_ptr<nccl_chunk::Outbox> parent;
              if (links.parent >= 0)
                parent = std::make_unique<nccl_chunk::Outbox>(run.comm, run.view.host_of(me),
                                                              run.view.rank_of(links.parent), tag + c, slots,
                                                              run.network_channel_rate * tree_send_share(run.g, c, me, true));
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
  run.start(fmt::format("nccl-{}-down{}", run.view.rank_of(me), c), [&run, c, me, tag, slots, pieces, links,
                                                                     piece, finals] {
    const bool math = run.math;
    std::unique_ptr<nccl_chunk::Inbox> parent;
    if (links.parent >= 0)
      parent = std::make_unique<nccl_chunk::Inbox>(run.comm, run.view.rank_of(links.parent), tag + c, slots,
                                                   pieces, run.arrival_delay(links.parent, me));
    std::vector<std::unique_ptr<nccl_chunk::Outbox>> children;
    for (int child : links.children)
      children.push_back(std::make_unique<nccl_chunk::Outbox>(
          run.comm, run.view.host_of(me), run.view.rank_of(child), tag + c, slots,
          run.network_channel_rate * tree_send_share(run.g, c, me, false)));
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
}

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

  void start_chunks(NcclChunkCall& call) const override {
    for (int c = 0; c < call.channels; ++c) start_tree_channel(call, c);
  }

  bool flow_moves_piecewise(const NcclCallPlan& plan) const override { return plan.loops <= kTreePiecewiseLoops; }
  // Every piece up and down each of a channel's p - 1 edges.
  double chunk_messages(const NcclCallPlan& plan) const override {
    return 2.0 * plan.choice.channels * (view_.size() - 1) * plan.loops;
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

// Up each channel's tree: each member adds its children's partial results to its own input, in
// their order. Walked depth first with one buffer per depth, not by recursion over a vector per
// member: the same operations in the same order, without two allocations per member and channel.
Eigen::VectorXf nccl_tree_reduce(const NcclView& view, const NcclCallPlan& plan,
                                 const std::vector<const Eigen::VectorXf*>& inputs, const NcclOp& op) {
  const int channels = plan.choice.channels;
  std::vector<NcclTreeLinks> links(inputs.size());
  std::vector<Eigen::VectorXf> partial;  // by depth: the partial result of the member there
  struct Visit {
    int member;
    std::size_t next_child;
  };
  std::vector<Visit> path;
  return nccl_reduce_per_channel(inputs.front()->size(), channels, [&](int c, const Range& r) {
    for (std::size_t m = 0; m < links.size(); ++m) links[m] = view.tree_links(c, channels, static_cast<int>(m));
    int root = 0;
    while (links[static_cast<std::size_t>(root)].parent >= 0) root = links[static_cast<std::size_t>(root)].parent;
    const auto enter = [&](int m) {
      if (partial.size() <= path.size()) partial.emplace_back();
      Eigen::VectorXf& acc = partial[path.size()];
      acc.resize(r.count);
      op.load(acc, inputs[static_cast<std::size_t>(m)]->segment(r.begin, r.count));
      path.push_back({m, 0});
    };
    enter(root);
    while (!path.empty()) {
      const std::size_t depth = path.size() - 1;
      const std::vector<int>& children = links[static_cast<std::size_t>(path[depth].member)].children;
      if (path[depth].next_child < children.size()) {
        enter(children[path[depth].next_child++]);
        continue;
      }
      if (depth > 0) op.combine(partial[depth - 1], partial[depth]);
      path.pop_back();
    }
    return Eigen::VectorXf(partial[0]);
  });
}

}  // namespace aggsim
