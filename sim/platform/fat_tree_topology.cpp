// A fat tree, SimGrid's k-ary n-tree generalisation (Zahavi's notation, as <cluster
// topology="FAT_TREE" topo_parameters="levels;down;up;link_count">): level-i switches have down[i-1]
// children and up[i] parents, joined by link_count[i] parallel links; nodes are the leaves and
// have up[0] parents. Every link is full duplex with `bandwidth` / `latency`. SimGrid routes up to
// the lowest common ancestor with d-mod-k and back down, so two nodes under one leaf switch are
// 2 links apart and, in a 2-level tree, nodes under different leaf switches 4 links.
// Default: a 2-level full-bisection tree (each leaf switch as many links up as down) with about
// sqrt(nodes) nodes per leaf switch. Leaves beyond the node count hold idle routers.
#include <fmt/format.h>

#include <simgrid/s4u.hpp>
#include <stdexcept>

#include "sim/platform/endpoints.hpp"
#include "sim/platform/platform_overrides.hpp"
#include "sim/platform/shape_math.hpp"
#include "sim/platform/topology.hpp"

namespace aggsim {

namespace sg4 = simgrid::s4u;

namespace {

constexpr std::int64_t kMaxLeaves = 1 << 23;

std::vector<std::int64_t> list_or_empty(const Params& p, const std::string& key, std::int64_t levels) {
  if (!p.has(key)) return {};
  const auto& v = p.integers(key);
  if (static_cast<std::int64_t>(v.size()) != levels)
    throw std::invalid_argument(fmt::format(
        "{}: has {} entries but the tree has {} levels (one entry per level)", key, v.size(), levels));
  return v;
}

FatTreeShape fat_tree_shape(const Params& p, std::int64_t nodes) {
  FatTreeShape s;
  if (p.has("levels"))
    s.levels = p.integer("levels");
  else if (p.has("down"))
    s.levels = static_cast<std::int64_t>(p.integers("down").size());
  s.down = list_or_empty(p, "down", s.levels);
  s.up = list_or_empty(p, "up", s.levels);
  s.link_count = list_or_empty(p, "link_count", s.levels);
  if (s.down.empty()) {
    // About nodes^(1/levels) children per switch, the top level taking what is left.
    const std::int64_t radix = ceil_root(nodes, static_cast<int>(s.levels));
    std::int64_t below = 1;
    for (std::int64_t i = 0; i + 1 < s.levels; ++i) {
      s.down.push_back(radix);
      below *= radix;
    }
    s.down.push_back((nodes + below - 1) / below);
  }
  if (s.link_count.empty()) s.link_count.assign(static_cast<std::size_t>(s.levels), 1);
  if (s.up.empty()) {
    // Full bisection: a switch has as many links up as down.
    s.up.push_back(1);
    for (std::size_t i = 1; i < s.down.size(); ++i)
      s.up.push_back(std::max<std::int64_t>(1, s.down[i - 1] * s.link_count[i - 1] / s.link_count[i]));
  }
  const std::int64_t leaves = capped_product(s.down, kMaxLeaves);
  if (leaves < nodes)
    throw std::invalid_argument(
        fmt::format("down: the tree has {} leaves (the product of down) for {} nodes", leaves, nodes));
  if (leaves > kMaxLeaves)
    throw std::invalid_argument(fmt::format("down: the tree has more than {} leaves", kMaxLeaves));
  return s;
}

void build_fat_tree(const NodeShape& nodes, const FabricShape& fabric, const ResolvedOverrides& overrides) {
  EndpointBuilder endpoints(nodes, &overrides);
  const FatTreeShape& s = fabric.fat_tree;
  const sg4::FatTreeParams tree(static_cast<unsigned>(s.levels), convert_all<unsigned>(s.down),
                                convert_all<unsigned>(s.up), convert_all<unsigned>(s.link_count));
  create_platform_root();
  auto* zone =
      sg4::create_fatTree_zone("fat_tree", nullptr, tree, endpoints.callbacks("fat_tree-spare"),
                               nodes.bandwidth, nodes.latency, sg4::Link::SharingPolicy::SPLITDUPLEX);
  endpoints.attach();
  join_fabric(zone);
  // A node's own links are those to its leaf switches, link_from_<node>_<switch>_<n> with n below the
  // leaf link count (SimGrid 3.32 numbers them first).
  const std::int64_t leaf_links = fat_tree_leaf_links(s);
  std::vector<std::int64_t> numbers;
  override_fabric_links(overrides, [&](const std::string& name, std::vector<std::int64_t>& owners) {
    if (numbers_after(name, "link_from_", numbers) && numbers.size() >= 3 && numbers[2] < leaf_links)
      owners.push_back(numbers[0]);
  });
}

}  // namespace

std::int64_t fat_tree_leaf_links(const FatTreeShape& s) {
  return capped_product(s.down, kMaxLeaves) * s.up[0] * s.link_count[0];
}

TopologyInfo fat_tree_topology_entry() {
  TopologyInfo info;
  info.name = "fat_tree";
  info.summary = "fat tree of switches (SimGrid FAT_TREE, d-mod-k routing); default 2 levels, full bisection";
  info.params = endpoint_params("every tree link");
  info.params.push_back(
      ParamSpec("levels", ParamKind::integer, "", "switch levels (default: the length of down, else 2)")
          .between(1, 8));
  info.params.push_back(
      ParamSpec("down", ParamKind::integer_list, "",
                "children per switch, by level from the leaves (default: ~nodes^(1/levels) each)")
          .between(1, 1 << 16));
  info.params.push_back(ParamSpec("up", ParamKind::integer_list, "",
                                  "parents per node/switch, by level (default: 1, then full bisection)")
                            .between(1, 1 << 16));
  info.params.push_back(ParamSpec("link_count", ParamKind::integer_list, "",
                                  "parallel links to each parent, by level (default: 1 each)")
                            .between(1, 1 << 10));
  info.decode = [](const NodeShape& shape, const Params& p) {
    FabricShape fabric;
    fabric.fat_tree = fat_tree_shape(p, shape.endpoints());
    return fabric;
  };
  info.build = build_fat_tree;
  return info;
}

}  // namespace aggsim
