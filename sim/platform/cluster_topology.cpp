// A flat cluster: every node has a private full-duplex link (split up/down) to one non-blocking
// switch, so a transfer node-i -> node-j crosses node-i's up link and node-j's down link:
// latency 2*latency, bandwidth `bandwidth`. No backbone by default: a backbone that never limits
// anything still ties all flows together in SimGrid's solver and slows big runs several-fold.
// Nodes are plain hosts or multi-GPU zones (see endpoints.hpp).
//
// Under ns-3 (SimGrid 3.32 only hands ns-3 routes made of one link, and ignores star-zone routes)
// the same cluster is built as a full-routing zone of one-link routes to a "switch" router, which
// ns-3 turns into point-to-point links and IP routes through the switch.
#include <fmt/format.h>

#include <algorithm>
#include <simgrid/s4u.hpp>
#include <stdexcept>

#include "sim/platform/endpoints.hpp"
#include "sim/platform/platform.hpp"
#include "sim/platform/platform_overrides.hpp"
#include "sim/platform/topology.hpp"

namespace aggsim {

namespace sg4 = simgrid::s4u;

namespace {

std::string node_link_name(const NodeShape& shape, std::int64_t node) {
  if (shape.nvlink_domain > 1) return fmt::format("nvlink-domain-{}_link", node);
  return shape.has_nic ? fmt::format("node-{}_link", node) : endpoint_host_name(shape, node, 0) + "_link";
}

void build_star(const NodeShape& shape, const FabricShape& fabric, const ResolvedOverrides& overrides) {
  const sg4::NetZone* root = create_platform_root();
  auto* zone = sg4::create_star_zone("cluster");
  copy_models(zone, root);
  EndpointBuilder endpoints(shape, &overrides);
  sg4::Link* backbone = nullptr;
  if (fabric.backbone_bandwidth) {
    backbone = zone->create_link("backbone", *fabric.backbone_bandwidth)->set_latency(fabric.backbone_latency);
    backbone->seal();
  }
  // Links first, then the node zones, then the routes: the fabric gets no child zone before all its
  // links exist, so building stays linear in nodes (see EndpointBuilder).
  std::vector<sg4::Link*> links;
  links.reserve(static_cast<std::size_t>(shape.endpoints()));
  for (std::int64_t i = 0; i < shape.endpoints(); ++i) {
    links.push_back(
        zone->create_split_duplex_link(node_link_name(shape, i), overrides.bandwidth(i, shape.bandwidth))
            ->set_latency(overrides.latency(i, shape.latency)));
    links.back()->seal();
  }
  std::vector<std::pair<simgrid::kernel::routing::NetPoint*, simgrid::kernel::routing::NetPoint*>>
      endpoints_of;
  endpoints_of.reserve(links.size());
  for (std::int64_t i = 0; i < shape.endpoints(); ++i) endpoints_of.push_back(endpoints.create(zone, i));
  endpoints.attach();
  for (std::size_t i = 0; i < links.size(); ++i) {
    const auto [netpoint, gateway] = endpoints_of[i];
    // Up to the switch (through the backbone, if any), then down: the backbone is crossed once.
    std::vector<sg4::LinkInRoute> up = {sg4::LinkInRoute(links[i], sg4::LinkInRoute::Direction::UP)};
    if (backbone) up.emplace_back(backbone);
    zone->add_route(netpoint, nullptr, gateway, nullptr, up, false);
    zone->add_route(nullptr, netpoint, nullptr, gateway,
                    {sg4::LinkInRoute(links[i], sg4::LinkInRoute::Direction::DOWN)}, false);
  }
  join_fabric(zone);
}

// One-link symmetric route between two netpoints of a full zone (what ns-3 turns into a cable).
void cable(sg4::NetZone* zone, simgrid::kernel::routing::NetPoint* a, simgrid::kernel::routing::NetPoint* b,
           const std::string& name, double bandwidth, double latency) {
  auto* link = zone->create_link(name, bandwidth)->set_latency(latency);
  link->seal();
  zone->add_route(a, b, nullptr, nullptr, {sg4::LinkInRoute(link)}, true);
}

void build_for_ns3(const NodeShape& shape, const FabricShape& fabric, const ResolvedOverrides& overrides) {
  if (fabric.backbone_bandwidth)
    throw std::invalid_argument(
        "backbone_bandwidth: not supported with network ns3 (ns-3 sees one-link routes only)");
  if (shape.nvlink_domain > 1)
    throw std::invalid_argument(
        "nvlink_domain: not supported with network ns3 (its routes are single links: one node per NIC)");
  if (shape.intra_link == IntraLink::xgmi)
    throw std::invalid_argument(
        "intra_link: xgmi is not supported with network ns3 (its routes are single links: a star per node)");
  if (shape.nics_per_node > 1)
    throw std::invalid_argument(
        "nics_per_node: not supported with network ns3 (its routes are single links: one NIC per node)");
  auto* zone = sg4::create_full_zone("cluster");
  auto* sw = zone->create_router("cluster-switch");
  for (std::int64_t i = 0; i < shape.nodes; ++i) {
    const double bandwidth = overrides.bandwidth(i, shape.bandwidth),
                 latency = overrides.latency(i, shape.latency);
    auto values = [&](std::int64_t g) {
      const auto* v = overrides.host(i, g);
      return v ? *v : ResolvedOverrides::HostValues{};
    };
    // ns-3 forwards hop by hop, so the NIC and the fabric link are one cable at the slower speed.
    const auto* links = overrides.node(i);
    const double nic_bandwidth =
        links && links->nic_bandwidth ? links->nic_bandwidth->value : shape.nic_bandwidth;
    if (shape.gpus_per_node == 1) {
      auto* host = zone->create_host(endpoint_host_name(shape, i, 0), values(0).speed.value_or(shape.speed));
      host->seal();
      cable(zone, host->get_netpoint(), sw, node_link_name(shape, i),
            shape.has_nic ? std::min(bandwidth, nic_bandwidth) : bandwidth, latency);
      continue;
    }
    auto* nic = zone->create_router(fmt::format("node-{}-nic", i));
    cable(zone, nic, sw, node_link_name(shape, i), std::min(bandwidth, nic_bandwidth), latency);
    for (std::int64_t g = 0; g < shape.gpus_per_node; ++g) {
      const std::string name = endpoint_host_name(shape, i, g);
      const auto v = values(g);
      auto* host = zone->create_host(name, v.speed.value_or(shape.speed));
      write_gpu_properties(host, shape, i, g);
      host->seal();
      cable(zone, host->get_netpoint(), nic, name + "_link",
            shape.intra_link_rate(v.intra_bandwidth.value_or(shape.intra_bandwidth)),
            v.intra_latency.value_or(shape.intra_latency));
    }
  }
  zone->seal();
}

}  // namespace

TopologyInfo cluster_topology_entry() {
  TopologyInfo info;
  info.name = "cluster";
  info.summary = "nodes on one non-blocking switch, a private full-duplex link each";
  info.params = endpoint_params("each node's link to the switch (crossed twice)");
  info.params.push_back(ParamSpec("backbone_bandwidth", ParamKind::bandwidth, "",
                                  "optional shared backbone crossed by every transfer between nodes"));
  info.params.push_back(ParamSpec("backbone_latency", ParamKind::duration, "0s", "backbone latency"));
  info.decode = [](const NodeShape&, const Params& p) {
    FabricShape fabric;
    if (p.has("backbone_bandwidth")) {
      fabric.backbone_bandwidth = p.real("backbone_bandwidth");
      fabric.backbone_latency = p.real("backbone_latency");
    }
    return fabric;
  };
  info.build = build_star;
  info.build_ns3 = build_for_ns3;
  return info;
}

}  // namespace aggsim
