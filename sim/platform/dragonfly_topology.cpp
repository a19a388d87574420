// A dragonfly (SimGrid DRAGONFLY, as <cluster topology="DRAGONFLY" topo_parameters="g,gl;c,cl;r,rl;n">):
// `groups` groups of `chassis` chassis of `routers` routers, each router serving `nodes_per_router`
// nodes. Routers of a chassis are all-to-all (green links, x router_links), same-blade routers of a
// group's chassis are all-to-all (black, x chassis_links), and group g is wired to group h by one
// blue link (x group_links) from router h of g's first chassis. Every link has `bandwidth` (times
// its count) and `latency`. Minimal routing: node->router, then (across groups) to the router
// owning the blue link, the blue link, on to the target router, router->node. Because SimGrid
// 3.32 attaches group h's link to router h of the first chassis, groups may not exceed routers.
// Default: a balanced shape, k = ceil(nodes^(1/4)) nodes per router, routers per chassis and
// chassis per group, and just enough groups; unused node slots hold idle routers.
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

const std::vector<std::string> kShapeKeys = {"groups", "chassis", "routers", "nodes_per_router"};

// The groups, chassis, routers and nodes per router (given, or derived from the node count).
DragonflyShape dragonfly_size(const Params& p, std::int64_t nodes) {
  DragonflyShape s;
  std::size_t given = 0;
  for (const auto& key : kShapeKeys) given += p.has(key) ? 1 : 0;
  if (given == 0) {
    const std::int64_t k = ceil_root(nodes, 4);
    s.chassis = s.routers = s.nodes_per_router = k;
    s.groups = (nodes + k * k * k - 1) / (k * k * k);
    return s;
  }
  for (const auto& key : kShapeKeys)
    if (!p.has(key))
      throw std::invalid_argument(
          fmt::format("{}: give groups, chassis, routers and nodes_per_router together (or none, to derive "
                      "them from nodes)",
                      key));
  s.groups = p.integer("groups");
  s.chassis = p.integer("chassis");
  s.routers = p.integer("routers");
  s.nodes_per_router = p.integer("nodes_per_router");
  if (s.groups > s.routers)
    throw std::invalid_argument(fmt::format(
        "groups: {} groups need at least as many routers per chassis (routers = {}): SimGrid wires group h "
        "to router h of each group's first chassis",
        s.groups, s.routers));
  if (s.slots() < nodes)
    throw std::invalid_argument(fmt::format(
        "nodes_per_router: groups x chassis x routers x nodes_per_router = {} node slots for {} nodes",
        s.slots(), nodes));
  if (s.slots() > (std::int64_t(1) << 23))
    throw std::invalid_argument(fmt::format("nodes_per_router: {} node slots is too many", s.slots()));
  return s;
}

DragonflyShape dragonfly_shape(const Params& p, std::int64_t nodes) {
  DragonflyShape s = dragonfly_size(p, nodes);
  s.group_links = p.integer("group_links");
  s.chassis_links = p.integer("chassis_links");
  s.router_links = p.integer("router_links");
  return s;
}

void build_dragonfly(const NodeShape& nodes, const FabricShape& fabric, const ResolvedOverrides& overrides) {
  EndpointBuilder endpoints(nodes, &overrides);
  const DragonflyShape& s = fabric.dragonfly;
  auto u = [](std::int64_t v) { return static_cast<unsigned>(v); };
  const sg4::DragonflyParams shape({u(s.groups), u(s.group_links)}, {u(s.chassis), u(s.chassis_links)},
                                   {u(s.routers), u(s.router_links)}, u(s.nodes_per_router));
  create_platform_root();
  auto* zone =
      sg4::create_dragonfly_zone("dragonfly", nullptr, shape, endpoints.callbacks("dragonfly-spare"),
                                 nodes.bandwidth, nodes.latency, sg4::Link::SharingPolicy::SPLITDUPLEX);
  endpoints.attach();
  join_fabric(zone);
  // A node's own link is the one to its router, local_link_from_router_<r>_to_node_<j>_<k>: node
  // r * nodes_per_router + j.
  std::vector<std::int64_t> numbers;
  override_fabric_links(overrides, [&](const std::string& name, std::vector<std::int64_t>& owners) {
    if (numbers_after(name, "local_link_from_router_", numbers) && numbers.size() >= 2)
      owners.push_back(numbers[0] * s.nodes_per_router + numbers[1]);
  });
}

}  // namespace

TopologyInfo dragonfly_topology_entry() {
  TopologyInfo info;
  info.name = "dragonfly";
  info.summary =
      "groups of all-to-all router chassis joined by global links (SimGrid DRAGONFLY, minimal routing)";
  info.params = endpoint_params("every link (green, black, blue: times its count)");
  const auto count = [](const std::string& key, const std::string& help) {
    return ParamSpec(key, ParamKind::integer, "", help).between(1, 1 << 16);
  };
  info.params.push_back(count("groups", "groups (default: derived from nodes); at most `routers`"));
  info.params.push_back(count("chassis", "chassis per group (default: derived from nodes)"));
  info.params.push_back(count("routers", "routers per chassis (default: derived from nodes)"));
  info.params.push_back(count("nodes_per_router", "nodes per router (default: derived from nodes)"));
  info.params.push_back(
      ParamSpec("group_links", ParamKind::integer, "1", "parallel blue links between two groups")
          .between(1, 1024));
  info.params.push_back(
      ParamSpec("chassis_links", ParamKind::integer, "1", "parallel black links between chassis")
          .between(1, 1024));
  info.params.push_back(
      ParamSpec("router_links", ParamKind::integer, "1", "parallel green links between routers")
          .between(1, 1024));
  info.decode = [](const NodeShape& shape, const Params& p) {
    FabricShape fabric;
    fabric.dragonfly = dragonfly_shape(p, shape.endpoints());
    return fabric;
  };
  info.build = build_dragonfly;
  return info;
}

}  // namespace aggsim
