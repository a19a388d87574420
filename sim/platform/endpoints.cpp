#include "sim/platform/endpoints.hpp"

#include <fmt/format.h>

#include <stdexcept>

#include "sim/platform/platform.hpp"

namespace aggsim {

std::vector<ParamSpec> endpoint_params(const std::string& fabric_link_help) {
  return {
      ParamSpec("nodes", ParamKind::integer, "", "fabric endpoints (machines); give nodes or hosts")
          .between(1, 1 << 22),
      ParamSpec("hosts", ParamKind::integer, "", "total hosts = nodes x gpus_per_node; give nodes or hosts")
          .between(1, 1 << 22),
      ParamSpec("gpus_per_node", ParamKind::integer, "1",
                "hosts (GPUs) per node; above 1 each node is a zone")
          .between(1, 1024),
      ParamSpec("bandwidth", ParamKind::bandwidth, "10Gbps", fabric_link_help + ": bandwidth per direction"),
      ParamSpec("latency", ParamKind::duration, "1us", fabric_link_help + ": latency"),
      ParamSpec("speed", ParamKind::speed, "100Gf", "host compute speed"),
      ParamSpec("intra_bandwidth", ParamKind::bandwidth, "300GBps",
                "each GPU's link inside its node (per direction; gpus_per_node > 1)"),
      ParamSpec("intra_latency", ParamKind::duration, "1us", "each GPU's link latency inside its node"),
      ParamSpec("nic_bandwidth", ParamKind::bandwidth, "",
                "node's NIC to the fabric, shared by its GPUs (default: bandwidth; gpus_per_node > 1)"),
  };
}

NodeShape node_shape(const Params& p) {
  NodeShape s;
  s.gpus_per_node = p.integer("gpus_per_node");
  const bool has_nodes = p.has("nodes"), has_hosts = p.has("hosts");
  if (has_nodes == has_hosts)
    throw std::invalid_argument(has_nodes
                                    ? "give either 'nodes' or 'hosts', not both"
                                    : "needs 'nodes' (fabric endpoints) or 'hosts' (nodes x gpus_per_node)");
  if (has_nodes) {
    s.nodes = p.integer("nodes");
  } else {
    const std::int64_t hosts = p.integer("hosts");
    if (hosts % s.gpus_per_node != 0)
      throw std::invalid_argument(fmt::format(
          "hosts: {} hosts are not a whole number of nodes of gpus_per_node = {}", hosts, s.gpus_per_node));
    s.nodes = hosts / s.gpus_per_node;
  }
  if (s.hosts() > (1 << 22))
    throw std::invalid_argument(
        fmt::format("nodes: {} nodes x {} GPUs is more than {} hosts", s.nodes, s.gpus_per_node, 1 << 22));
  s.speed = p.real("speed");
  s.bandwidth = p.real("bandwidth");
  s.latency = p.real("latency");
  s.intra_bandwidth = p.real("intra_bandwidth");
  s.intra_latency = p.real("intra_latency");
  if (p.has("nic_bandwidth") && s.gpus_per_node == 1)
    throw std::invalid_argument(
        "nic_bandwidth: only used with gpus_per_node > 1 (a single-GPU node's fabric link is its NIC: set "
        "bandwidth)");
  s.nic_bandwidth = p.has("nic_bandwidth") ? p.real("nic_bandwidth") : s.bandwidth;
  return s;
}

std::function<std::int64_t(const Params&)> checked_host_count(
    std::function<void(const Params&, std::int64_t nodes)> check) {
  return [check = std::move(check)](const Params& p) {
    const NodeShape shape = node_shape(p);
    if (check) check(p, shape.nodes);
    return shape.hosts();
  };
}

std::string endpoint_host_name(const NodeShape& shape, std::int64_t node, std::int64_t gpu) {
  if (shape.gpus_per_node == 1) return fmt::format("host-{}", node);
  return fmt::format("node-{}-gpu-{}", node, gpu);
}

std::pair<simgrid::kernel::routing::NetPoint*, simgrid::kernel::routing::NetPoint*> create_endpoint(
    sg4::NetZone* fabric, const NodeShape& shape, std::int64_t node) {
  if (shape.gpus_per_node == 1) {
    auto* host = fabric->create_host(endpoint_host_name(shape, node, 0), shape.speed);
    host->seal();
    return {host->get_netpoint(), nullptr};
  }
  auto* zone = sg4::create_star_zone(fmt::format("node-{}", node));
  zone->set_parent(fabric);
  auto* gateway = zone->create_router(fmt::format("node-{}-nic", node));
  auto* nic =
      zone->create_split_duplex_link(fmt::format("node-{}_nic", node), shape.nic_bandwidth)->set_latency(0);
  nic->seal();
  // A star route to the gateway ends with the gateway's "down" links, one from it starts with its
  // "up" links: so leaving the node crosses the NIC's UP half, entering it the DOWN half.
  zone->add_route(nullptr, gateway, nullptr, nullptr,
                  {sg4::LinkInRoute(nic, sg4::LinkInRoute::Direction::UP)}, false);
  zone->add_route(gateway, nullptr, nullptr, nullptr,
                  {sg4::LinkInRoute(nic, sg4::LinkInRoute::Direction::DOWN)}, false);
  const std::string node_id = std::to_string(node);
  for (std::int64_t g = 0; g < shape.gpus_per_node; ++g) {
    const std::string name = endpoint_host_name(shape, node, g);
    auto* host = zone->create_host(name, shape.speed);
    host->set_property(kNodeProperty, node_id);
    host->seal();
    auto* link = zone->create_split_duplex_link(name + "_link", shape.intra_bandwidth)
                     ->set_latency(shape.intra_latency);
    link->seal();
    zone->add_route(host->get_netpoint(), nullptr, nullptr, nullptr,
                    {sg4::LinkInRoute(link, sg4::LinkInRoute::Direction::UP)}, false);
    zone->add_route(nullptr, host->get_netpoint(), nullptr, nullptr,
                    {sg4::LinkInRoute(link, sg4::LinkInRoute::Direction::DOWN)}, false);
  }
  zone->seal();
  return {zone->get_netpoint(), gateway};
}

sg4::ClusterCallbacks endpoint_callbacks(const NodeShape& shape, const std::string& spare_prefix) {
  return sg4::ClusterCallbacks(
      [shape, spare_prefix](sg4::NetZone* zone, const std::vector<unsigned long>& /*coord*/, unsigned long id)
          -> std::pair<simgrid::kernel::routing::NetPoint*, simgrid::kernel::routing::NetPoint*> {
        const auto node = static_cast<std::int64_t>(id);
        if (node < shape.nodes) return create_endpoint(zone, shape, node);
        return {zone->create_router(fmt::format("{}-{}", spare_prefix, id)), nullptr};
      });
}

}  // namespace aggsim
