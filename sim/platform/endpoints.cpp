#include "sim/platform/endpoints.hpp"

#include <fmt/format.h>

#include <simgrid/kernel/routing/NetZoneImpl.hpp>
#include <stdexcept>

#include "sim/platform/platform.hpp"
#include "sim/platform/platform_overrides.hpp"
#include "sim/platform/xgmi_mesh.hpp"

namespace aggsim {

std::vector<ParamSpec> endpoint_params(const std::string& fabric_link_help) {
  return {
      ParamSpec("nodes", ParamKind::integer, "", "nodes (machines; with nvlink_domain, trays); give nodes or hosts")
          .between(1, 1 << 22),
      ParamSpec("hosts", ParamKind::integer, "", "total hosts = nodes x gpus_per_node; give nodes or hosts")
          .between(1, 1 << 22),
      ParamSpec("gpus_per_node", ParamKind::integer, "1",
                "hosts (GPUs) per node; above 1 each node is a zone")
          .between(1, 1024),
      ParamSpec("bandwidth", ParamKind::bandwidth, "10Gbps",
                fabric_link_help + ": bandwidth per direction (per NIC plane with nics_per_node > 1)"),
      ParamSpec("latency", ParamKind::duration, "1us", fabric_link_help + ": latency"),
      ParamSpec("speed", ParamKind::speed, "100Gf", "host compute speed"),
      ParamSpec("intra_bandwidth", ParamKind::bandwidth, "300GBps",
                "each GPU's link inside its node (per direction; gpus_per_node > 1); with intra_link xgmi "
                "the GPU's own link towards its NIC (PCIe)"),
      ParamSpec("intra_latency", ParamKind::duration, "1us", "each GPU's link latency inside its node"),
      ParamSpec("nvlink_efficiency", ParamKind::real, "",
                "intra_link nvlink: the share of intra_bandwidth NVLink carries as data (packet headers and "
                "flow control take the rest); the GPUs' links are built at intra_bandwidth x "
                "nvlink_efficiency, while NCCL's model sizes its graphs and NVLS by the port's rate. The "
                "named NVIDIA systems set NCCL's own per-link figure (src/graph/topo.h); default 1")
          .between(0.05, 1),
      ParamSpec("intra_link", ParamKind::choice, "nvlink",
                "what the GPUs of a node talk over (sets the per-hop costs of NCCL's protocols); xgmi: a "
                "full mesh, one link of xgmi_bandwidth between every pair of GPUs and no switch (AMD "
                "Instinct)")
          .one_of(kIntraLinkNames.list()),
      ParamSpec("xgmi_bandwidth", ParamKind::bandwidth, "",
                "intra_link xgmi: each GPU pair's link, per direction (default: 48GBps, an MI300X "
                "Infinity Fabric link as AMD measures it usable)"),
      ParamSpec("nic_bandwidth", ParamKind::bandwidth, "",
                "each NIC of a node, between its GPUs and the fabric (default: bandwidth)"),
      ParamSpec("nics_per_node", ParamKind::integer, "1",
                "NICs per node; GPU g's traffic to other nodes uses NIC g mod nics_per_node (rail-optimised "
                "nodes), and the fabric carries one plane per NIC")
          .between(1, 64),
      ParamSpec("nvswitch", ParamKind::boolean, "false",
                "the GPUs of a node sit on a switch that reduces (NVSwitch with NVLS; gpus_per_node > 1)"),
      ParamSpec("gpu_nic_path", ParamKind::choice, "",
                "how each GPU reaches its NIC, in NCCL's path names: pix | pxb through PCIe switches "
                "(default pxb), pxn through another GPU, phb | sys through the CPU (NCCL then keeps LL128 "
                "inside nodes)")
          .one_of(kGpuNicPathNames.list()),
      ParamSpec("gpu", ParamKind::choice, "",
                "the GPUs' generation, whose constants NCCL's model follows (cdna3: RCCL's); default: "
                "none declared (NCCL's model then takes hopper), cdna3 with intra_link xgmi")
          .one_of(kGpuNames.list()),
      ParamSpec("nvlink_domain", ParamKind::integer, "",
                "nodes per NVLink domain: each nvlink_domain consecutive nodes put all their GPUs on one "
                "switch fabric at intra_bandwidth (NVL72: 18 trays of 4 GPUs), each node keeping its own "
                "NICs; NCCL's model counts a domain as one node (multi-node NVLink). Must divide nodes; "
                "default: none (each node its own)")
          .between(1, 1024),
  };
}

namespace {

// An NVLink domain joins whole nodes of several GPUs over NVLink.
void check_nvlink_domain(const NodeShape& s, const Params& p) {
  if (s.nvlink_domain == 1) return;
  if (s.nodes % s.nvlink_domain != 0)
    throw std::invalid_argument(fmt::format(
        "nvlink_domain: {} nodes are not a whole number of NVLink domains of {} nodes each", s.nodes,
        s.nvlink_domain));
  if (s.gpus_per_node == 1)
    throw std::invalid_argument(
        "nvlink_domain: a domain joins nodes of several GPUs over NVLink: needs gpus_per_node > 1");
  if (p.text("intra_link") != kIntraLinkNames.name(IntraLink::nvlink))
    throw std::invalid_argument(fmt::format(
        "nvlink_domain: a domain's GPUs share one NVLink switch fabric: needs intra_link nvlink, not {}",
        p.text("intra_link")));
}

}  // namespace

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
    s.sized_by_hosts = true;
  }
  if (s.hosts() > (1 << 22))
    throw std::invalid_argument(
        fmt::format("nodes: {} nodes x {} GPUs is more than {} hosts", s.nodes, s.gpus_per_node, 1 << 22));
  // Each multi-GPU node is a SimGrid zone with its actors' flows: beyond these bounds a run's memory
  // and time (one all-reduce step of 8,192 nodes of 8 GPUs: tests/bench/results/nccl.csv) outgrow
  // the machines aggsim is meant for.
  if (s.gpus_per_node > 1 && (s.nodes > kMaxMultiGpuNodes || s.hosts() > kMaxMultiGpuHosts))
    throw std::invalid_argument(fmt::format(
        "nodes: {} nodes x {} GPUs is more than this simulator builds with gpus_per_node > 1 (at most {} "
        "nodes and {} hosts: every multi-GPU node is a SimGrid zone, and a run's memory and time grow "
        "with its GPUs' flows); use fewer nodes, or gpus_per_node: 1 (plain hosts, up to {} of them)",
        s.nodes, s.gpus_per_node, kMaxMultiGpuNodes, kMaxMultiGpuHosts, 1 << 22));
  s.speed = p.real("speed");
  s.nics_per_node = p.integer("nics_per_node");
  s.nvlink_domain = p.has("nvlink_domain") ? p.integer("nvlink_domain") : 1;
  check_nvlink_domain(s, p);
  // A fabric endpoint is a domain: its link carries one plane per NIC of all its nodes.
  s.bandwidth = p.real("bandwidth") * static_cast<double>(s.nics_per_node * s.nvlink_domain);
  s.latency = p.real("latency");
  s.intra_bandwidth = p.real("intra_bandwidth");
  s.intra_latency = p.real("intra_latency");
  s.intra_link = *kIntraLinkNames.find(p.text("intra_link"));
  if (p.has("nvlink_efficiency")) s.nvlink_efficiency = p.real("nvlink_efficiency");
  if (s.nvlink_efficiency != 1 && s.intra_link != IntraLink::nvlink)
    throw std::invalid_argument(fmt::format(
        "nvlink_efficiency: NVLink's data share applies to intra_link nvlink, not {}", p.text("intra_link")));
  s.nic_bandwidth = p.has("nic_bandwidth") ? p.real("nic_bandwidth") : p.real("bandwidth");
  s.has_nic = s.gpus_per_node > 1 || p.has("nic_bandwidth") || s.nics_per_node > 1;
  s.nvswitch = p.boolean("nvswitch");
  if (p.has("gpu_nic_path")) s.gpu_nic_path = kGpuNicPathNames.find(p.text("gpu_nic_path"));
  if (p.has("gpu")) s.gpu = kGpuNames.find(p.text("gpu"));
  if (s.nvswitch && s.gpus_per_node == 1)
    throw std::invalid_argument(
        "nvswitch: a switch that reduces joins the GPUs of one node: needs gpus_per_node > 1");
  check_xgmi_mesh(s, p);
  return s;
}

void write_gpu_properties(sg4::Host* host, const NodeShape& shape, std::int64_t node, std::int64_t gpu) {
  if (shape.has_nic) {
    host->set_property(kNodeProperty, std::to_string(node));
    host->set_property(kNicProperty, std::to_string(gpu % shape.nics_per_node));
  }
  if (shape.gpus_per_node > 1) host->set_property(kIntraLinkProperty, kIntraLinkNames.name(shape.intra_link));
  if (shape.nvswitch) host->set_property(kNvswitchProperty, "true");
  if (shape.gpu_nic_path) host->set_property(kGpuNicPathProperty, kGpuNicPathNames.name(*shape.gpu_nic_path));
  if (shape.gpu) host->set_property(kGpuProperty, kGpuNames.name(*shape.gpu));
  if (shape.nvlink_domain > 1) host->set_property(kNvlinkDomainProperty, std::to_string(node / shape.nvlink_domain));
  if (shape.gpus_per_node > 1 && shape.nvlink_efficiency != 1)
    host->set_property(kNvlinkEfficiencyProperty, fmt::format("{}", shape.nvlink_efficiency));
}

std::string endpoint_host_name(const NodeShape& shape, std::int64_t node, std::int64_t gpu) {
  if (shape.gpus_per_node == 1) return fmt::format("host-{}", node);
  return fmt::format("node-{}-gpu-{}", node, gpu);
}

sg4::NetZone* create_platform_root() {
  // An empty zone routes nothing: every route of a generated platform lies within its fabric.
  return sg4::create_empty_zone("platform");
}

void copy_models(sg4::NetZone* zone, const sg4::NetZone* from) {
  auto* impl = zone->get_impl();
  const auto* source = from->get_impl();
  impl->set_network_model(source->get_network_model());
  impl->set_cpu_pm_model(source->get_cpu_pm_model());
  impl->set_cpu_vm_model(source->get_cpu_vm_model());
  impl->set_disk_model(source->get_disk_model());
  impl->set_host_model(source->get_host_model());
}

void join_fabric(sg4::NetZone* fabric) {
  fabric->set_parent(sg4::Engine::get_instance()->get_netzone_root());
  fabric->seal();
}

std::pair<simgrid::kernel::routing::NetPoint*, simgrid::kernel::routing::NetPoint*> EndpointBuilder::create(
    sg4::NetZone* fabric, std::int64_t endpoint) {
  if (!shape_.has_nic) {
    sg4::Host* host = create_gpu(fabric, endpoint, 0);
    return {host->get_netpoint(), nullptr};
  }
  // An NVLink domain is one zone holding all its nodes' GPUs and NICs (endpoint = domain index).
  const bool domain = shape_.nvlink_domain > 1;
  const std::string name = domain ? fmt::format("nvlink-domain-{}", endpoint) : fmt::format("node-{}", endpoint);
  const bool mesh = shape_.intra_link == IntraLink::xgmi;
  // A full zone when GPUs use different NICs: a star routes every host to the gateway the same way.
  sg4::NetZone* zone =
      shape_.nics_per_node > 1 || domain || mesh ? sg4::create_full_zone(name) : sg4::create_star_zone(name);
  copy_models(zone, fabric);  // links and hosts are made before the zone is attached
  auto* gateway = zone->create_router(name + "-nic");
  if (mesh)
    fill_mesh_node(zone, gateway, endpoint);
  else if (domain)
    fill_rail_node(zone, gateway, endpoint * shape_.nvlink_domain, shape_.nvlink_domain);
  else if (shape_.nics_per_node > 1)
    fill_rail_node(zone, gateway, endpoint, 1);
  else
    fill_star_node(zone, gateway, endpoint);
  detached_.emplace_back(zone, fabric);
  return {zone->get_netpoint(), gateway};
}

double EndpointBuilder::nic_bandwidth(std::int64_t node) const {
  const auto* node_links = overrides_ ? overrides_->node(node) : nullptr;
  return node_links && node_links->nic_bandwidth ? node_links->nic_bandwidth->value : shape_.nic_bandwidth;
}

sg4::Host* EndpointBuilder::create_gpu(sg4::NetZone* zone, std::int64_t node, std::int64_t gpu) {
  const auto* values = overrides_ ? overrides_->host(node, gpu) : nullptr;
  auto* host = zone->create_host(endpoint_host_name(shape_, node, gpu),
                                 values && values->speed ? *values->speed : shape_.speed);
  write_gpu_properties(host, shape_, node, gpu);
  host->seal();
  return host;
}

// One NIC: a star whose gateway's routes cross the NIC (UP leaving the node, DOWN entering it).
void EndpointBuilder::fill_star_node(sg4::NetZone* zone, simgrid::kernel::routing::NetPoint* gateway,
                                     std::int64_t node) {
  auto* nic =
      zone->create_split_duplex_link(fmt::format("node-{}_nic", node), nic_bandwidth(node))->set_latency(0);
  nic->seal();
  // A star route to the gateway ends with the gateway's "down" links, one from it starts with its
  // "up" links: so leaving the node crosses the NIC's UP half, entering it the DOWN half.
  zone->add_route(nullptr, gateway, nullptr, nullptr,
                  {sg4::LinkInRoute(nic, sg4::LinkInRoute::Direction::UP)}, false);
  zone->add_route(gateway, nullptr, nullptr, nullptr,
                  {sg4::LinkInRoute(nic, sg4::LinkInRoute::Direction::DOWN)}, false);
  for (std::int64_t g = 0; g < shape_.gpus_per_node; ++g) {
    sg4::Host* host = create_gpu(zone, node, g);
    sg4::Link* link = gpu_link(zone, host, node, g);
    zone->add_route(host->get_netpoint(), nullptr, nullptr, nullptr,
                    {sg4::LinkInRoute(link, sg4::LinkInRoute::Direction::UP)}, false);
    zone->add_route(nullptr, host->get_netpoint(), nullptr, nullptr,
                    {sg4::LinkInRoute(link, sg4::LinkInRoute::Direction::DOWN)}, false);
  }
}

// Several NICs, or the nodes of one NVLink domain: every route explicit, so GPU g of node n reaches
// the gateway through NIC g mod nics_per_node of node n, and any other GPU of the zone through their
// two links only (the domain's NVLink switches do not block).
void EndpointBuilder::fill_rail_node(sg4::NetZone* zone, simgrid::kernel::routing::NetPoint* gateway,
                                     std::int64_t first_node, std::int64_t node_count) {
  std::vector<sg4::Link*> nics;
  std::vector<sg4::Host*> hosts;
  std::vector<sg4::Link*> links;
  std::vector<sg4::Link*> nic_of;
  for (std::int64_t node = first_node; node < first_node + node_count; ++node) {
    const std::size_t first_nic = nics.size();
    for (std::int64_t k = 0; k < shape_.nics_per_node; ++k) {
      nics.push_back(zone->create_split_duplex_link(fmt::format("node-{}_nic-{}", node, k), nic_bandwidth(node))
                         ->set_latency(0));
      nics.back()->seal();
    }
    for (std::int64_t g = 0; g < shape_.gpus_per_node; ++g) {
      hosts.push_back(create_gpu(zone, node, g));
      links.push_back(gpu_link(zone, hosts.back(), node, g));
      nic_of.push_back(nics[first_nic + static_cast<std::size_t>(g % shape_.nics_per_node)]);
    }
  }
  using Dir = sg4::LinkInRoute::Direction;
  for (std::size_t a = 0; a < hosts.size(); ++a) {
    zone->add_route(hosts[a]->get_netpoint(), gateway, nullptr, nullptr,
                    {sg4::LinkInRoute(links[a], Dir::UP), sg4::LinkInRoute(nic_of[a], Dir::UP)}, false);
    zone->add_route(gateway, hosts[a]->get_netpoint(), nullptr, nullptr,
                    {sg4::LinkInRoute(nic_of[a], Dir::DOWN), sg4::LinkInRoute(links[a], Dir::DOWN)}, false);
    for (std::size_t b = 0; b < hosts.size(); ++b)
      if (a != b)
        zone->add_route(hosts[a]->get_netpoint(), hosts[b]->get_netpoint(), nullptr, nullptr,
                        {sg4::LinkInRoute(links[a], Dir::UP), sg4::LinkInRoute(links[b], Dir::DOWN)}, false);
  }
}

sg4::Link* EndpointBuilder::gpu_link(sg4::NetZone* zone, const sg4::Host* host, std::int64_t node,
                                     std::int64_t gpu) {
  const auto* values = overrides_ ? overrides_->host(node, gpu) : nullptr;
  auto* link =
      zone->create_split_duplex_link(host->get_name() + "_link",
                                     shape_.intra_link_rate(values && values->intra_bandwidth ? *values->intra_bandwidth
                                                                                              : shape_.intra_bandwidth))
          ->set_latency(values && values->intra_latency ? *values->intra_latency : shape_.intra_latency);
  link->seal();
  return link;
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
        // SimGrid's builders make the fabric zone apart from the root, without models.
        if (!zone->get_impl()->get_network_model())
          copy_models(zone, sg4::Engine::get_instance()->get_netzone_root());
        const auto node = static_cast<std::int64_t>(id);
        if (node < shape_.endpoints()) {
          // SimGrid's builders add the leaf's own links and routes right after this call, and they
          // need the node zone attached (its netpoint numbered in the fabric): attach it now.
          auto endpoint = create(zone, node);
          attach();
          return endpoint;
        }
        return {zone->create_router(fmt::format("{}-{}", spare_prefix, id)), nullptr};
      });
}

}  // namespace aggsim
