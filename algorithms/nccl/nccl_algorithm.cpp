// The geometry builder every NCCL algorithm lays its edges out with (nccl_algorithm.hpp).
#include "algorithms/nccl/nccl_algorithm.hpp"

#include <algorithm>
#include <functional>
#include <limits>
#include <map>

namespace aggsim {

namespace {

// Each stream's share of its narrowest link, among all the call's streams (rate) and among those of
// its phase (first_rate), at most its share of what one channel moves (`channel_cap`, 0: none;
// `cap_share` per edge, 0: not bound by it).
template <class Edge>
void set_rates(const std::vector<Edge*>& edges, const std::vector<std::vector<sg4::Link*>>& routes,
               const std::vector<int>& phases, int last_phase, double channel_cap,
               const std::vector<double>& cap_share) {
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
    if (channel_cap > 0 && cap_share[i] > 0) {
      rate = std::min(rate, channel_cap * cap_share[i]);
      first = std::min(first, channel_cap * cap_share[i]);
    }
    edges[i]->rate = rate;
    edges[i]->first_rate = first;
  }
}

// Pieces cross links together when they are as far into the pipeline, in any channel's tree: up, a
// member sends once its children's pieces are in, as many hops after the start as the longest way
// up from the leaves below it (its height); down, as many hops after the root as its depth. The
// trees' edges, as (channel, member) of an edge to a parent (direction 0) or from one (1), by
// (direction, level).
std::map<std::pair<int, int>, std::vector<std::pair<int, int>>> tree_levels(const NcclGeometry& g, int p) {
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

}  // namespace

int nccl_send_group(const NcclGeometry& g, int channel, int from, int to) {
  const auto c = static_cast<std::size_t>(channel);
  if (c >= g.tree.size()) return -1;
  if (g.tree[c][static_cast<std::size_t>(from)].parent == to) return 0;
  if (g.tree[c][static_cast<std::size_t>(to)].parent == from) return 1;
  return -1;
}

double tree_send_share(const NcclGeometry& g, int channel, int member, bool up) {
  if (up) return 1;
  const auto children = g.tree[static_cast<std::size_t>(channel)][static_cast<std::size_t>(member)].children.size();
  return 1.0 / static_cast<double>(std::max<std::size_t>(1, children));
}

void NcclGeometryBuilder::add(NcclGeometry::Edge& e) {
  const int p = view_.size();
  std::vector<sg4::Link*> links;
  double latency = 0;
  view_.host_of(e.from)->route_to(view_.host_of(e.to), links, &latency);
  e.latency = latency;
  e.cls = view_.hop_class(e.from, e.to);
  edges_.push_back(&e);
  g_.routes[static_cast<std::uint64_t>(e.from) * static_cast<std::uint64_t>(p) +
            static_cast<std::uint64_t>(e.to)] = std::vector<const sg4::Link*>(links.begin(), links.end());
  routes_.push_back(std::move(links));
  phases_.push_back(phase);
  cap_share_.push_back(e.cls == LinkClass::network ? 1.0 : 0.0);
}

void NcclGeometryBuilder::add_tree_edges() {
  for (const auto& [at, edges_at] : tree_levels(g_, view_.size())) {
    auto& list = at.first == 0 ? g_.tree_up : g_.tree_down;
    for (const auto& [c, x] : edges_at) {
      auto& e = list[static_cast<std::size_t>(c)][static_cast<std::size_t>(x)];
      add(e);
      // A tree channel's sends out of a member, over NVLink as over the network, are its rate: up
      // to the parent, or shared by the copies it passes down to its children (tree_send_share).
      cap_share_.back() = tree_send_share(g_, c, e.from, at.first == 0);
    }
    ++phase;
  }
}

void NcclGeometryBuilder::finish() {
  set_rates(edges_, routes_, phases_, phase, network_cap_, cap_share_);
}

}  // namespace aggsim
