#include "sim/platform/endpoints.hpp"

#include <fmt/format.h>

#include <simgrid/kernel/routing/NetZoneImpl.hpp>
#include <stdexcept>

#include "sim/platform/platform.hpp"
#include "sim/platform/platform_overrides.hpp"

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
  // Each multi-GPU node is a SimGrid zone, and SimGrid 3.32 checks every new link name against, and
  // seals, every zone: building costs about nodes x hosts (4,096 nodes of 8 GPUs as a fat tree: 35 s).
  if (s.gpus_per_node > 1 && (s.nodes > kMaxMultiGpuNodes || s.hosts() > kMaxMultiGpuHosts))
    throw std::invalid_argument(fmt::format(
        "nodes: {} nodes x {} GPUs is more than this simulator builds with gpus_per_node > 1 (at most {} "
        "nodes and {} hosts: every multi-GPU node is a SimGrid zone, and the platform's build time grows "
        "with "
        "nodes x hosts); use fewer nodes, or gpus_per_node: 1 (plain hosts, up to {} of them)",
        s.nodes, s.gpus_per_node, kMaxMultiGpuNodes, kMaxMultiGpuHosts, 1 << 22));
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

std::pair<simgrid::kernel::routing::NetPoint*, simgrid::kernel::routing::NetPoint*> EndpointBuilder::create(
    sg4::NetZone* fabric, std::int64_t node) {
  const NodeShape& shape = shape_;
  const ResolvedOverrides::HostValues none;
  auto host_values = [&](std::int64_t gpu) -> const ResolvedOverrides::HostValues& {
    const auto* values = overrides_ ? overrides_->host(node, gpu) : nullptr;
    return values ? *values : none;
  };
  if (shape.gpus_per_node == 1) {
    auto* host =
        fabric->create_host(endpoint_host_name(shape, node, 0), host_values(0).speed.value_or(shape.speed));
    host->seal();
    return {host->get_netpoint(), nullptr};
  }
  auto* zone = sg4::create_star_zone(fmt::format("node-{}", node));
  // What set_parent would copy, so that links and hosts can be made before the zone is attached.
  auto* impl = zone->get_impl();
  const auto* fabric_impl = fabric->get_impl();
  impl->set_network_model(fabric_impl->get_network_model());
  impl->set_cpu_pm_model(fabric_impl->get_cpu_pm_model());
  impl->set_cpu_vm_model(fabric_impl->get_cpu_vm_model());
  impl->set_disk_model(fabric_impl->get_disk_model());
  impl->set_host_model(fabric_impl->get_host_model());
  auto* gateway = zone->create_router(fmt::format("node-{}-nic", node));
  const auto* node_links = overrides_ ? overrides_->node(node) : nullptr;
  const double nic_bandwidth =
      node_links && node_links->nic_bandwidth ? node_links->nic_bandwidth->value : shape.nic_bandwidth;
  auto* nic = zone->create_split_duplex_link(fmt::format("node-{}_nic", node), nic_bandwidth)->set_latency(0);
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
    const auto& values = host_values(g);
    auto* host = zone->create_host(name, values.speed.value_or(shape.speed));
    host->set_property(kNodeProperty, node_id);
    host->seal();
    auto* link =
        zone->create_split_duplex_link(name + "_link", values.intra_bandwidth.value_or(shape.intra_bandwidth))
            ->set_latency(values.intra_latency.value_or(shape.intra_latency));
    link->seal();
    zone->add_route(host->get_netpoint(), nullptr, nullptr, nullptr,
                    {sg4::LinkInRoute(link, sg4::LinkInRoute::Direction::UP)}, false);
    zone->add_route(nullptr, host->get_netpoint(), nullptr, nullptr,
                    {sg4::LinkInRoute(link, sg4::LinkInRoute::Direction::DOWN)}, false);
  }
  detached_.emplace_back(zone, fabric);
  return {zone->get_netpoint(), gateway};
}

void EndpointBuilder::attach() {
  for (auto [zone, fabric] : detached_) {
    zone->set_parent(fabric);
    zone->seal();
  }
  detached_.clear();
}

sg4::ClusterCallbacks EndpointBuilder::callbacks(const std::string& spare_prefix) {
  return sg4::ClusterCallbacks(
      [this, spare_prefix](sg4::NetZone* zone, const std::vector<unsigned long>& /*coord*/, unsigned long id)
          -> std::pair<simgrid::kernel::routing::NetPoint*, simgrid::kernel::routing::NetPoint*> {
        const auto node = static_cast<std::int64_t>(id);
        if (node < shape_.nodes) {
          // SimGrid's builders add the leaf's own links and routes right after this call, and they
          // need the node zone attached: attach it now (so these builders stay quadratic in nodes).
          auto endpoint = create(zone, node);
          attach();
          return endpoint;
        }
        return {zone->create_router(fmt::format("{}-{}", spare_prefix, id)), nullptr};
      });
}

}  // namespace aggsim
