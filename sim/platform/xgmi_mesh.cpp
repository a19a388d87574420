#include "sim/platform/xgmi_mesh.hpp"

#include <fmt/format.h>

#include <stdexcept>
#include <vector>

#include "sim/platform/endpoints.hpp"

namespace aggsim {

void check_xgmi_mesh(NodeShape& s, const Params& p) {
  const bool mesh = s.intra_link == IntraLink::xgmi;
  if (!mesh) {
    if (p.has("xgmi_bandwidth"))
      throw std::invalid_argument(fmt::format(
          "xgmi_bandwidth: the rate of an xGMI mesh's links needs intra_link xgmi, not {}",
          kIntraLinkNames.name(s.intra_link)));
    return;
  }
  if (s.gpus_per_node == 1)
    throw std::invalid_argument(
        "intra_link: xgmi joins the GPUs of one node by a mesh of links: needs gpus_per_node > 1");
  if (s.nvswitch)
    throw std::invalid_argument(
        "nvswitch: an xGMI mesh has no switch (no NVLS): nvswitch true needs intra_link nvlink, not xgmi");
  if (s.gpu && *s.gpu != GpuGeneration::cdna3)
    throw std::invalid_argument(fmt::format(
        "gpu: an xGMI mesh joins AMD Instinct GPUs (cdna3), not {} (an NVIDIA generation)", kGpuNames.name(*s.gpu)));
  s.xgmi_bandwidth = p.has("xgmi_bandwidth") ? p.real("xgmi_bandwidth") : kDefaultXgmiBandwidth;
  if (!s.gpu) s.gpu = GpuGeneration::cdna3;  // only AMD Instinct GPUs sit on xGMI: RCCL's rules
}

std::string xgmi_link_name(std::int64_t node, std::int64_t a, std::int64_t b) {
  return fmt::format("node-{}_xgmi-{}-{}", node, a, b);
}

// Every route explicit: GPU g reaches the gateway over its own link and NIC g mod nics_per_node,
// and any other GPU of the node over their one xGMI link (UP from the lower-numbered GPU, DOWN back).
void EndpointBuilder::fill_mesh_node(sg4::NetZone* zone, simgrid::kernel::routing::NetPoint* gateway,
                                     std::int64_t node) {
  using Dir = sg4::LinkInRoute::Direction;
  std::vector<sg4::Link*> nics;
  for (std::int64_t k = 0; k < shape_.nics_per_node; ++k) {
    nics.push_back(zone->create_split_duplex_link(
                           shape_.nics_per_node == 1 ? fmt::format("node-{}_nic", node)
                                                     : fmt::format("node-{}_nic-{}", node, k),
                           nic_bandwidth(node))
                       ->set_latency(0));
    nics.back()->seal();
  }
  const auto g = static_cast<std::size_t>(shape_.gpus_per_node);
  std::vector<sg4::Host*> hosts;
  std::vector<sg4::Link*> own;
  for (std::size_t i = 0; i < g; ++i) {
    hosts.push_back(create_gpu(zone, node, static_cast<std::int64_t>(i)));
    own.push_back(gpu_link(zone, hosts.back(), node, static_cast<std::int64_t>(i)));
  }
  for (std::size_t a = 0; a < g; ++a) {
    sg4::Link* nic = nics[a % nics.size()];
    zone->add_route(hosts[a]->get_netpoint(), gateway, nullptr, nullptr,
                    {sg4::LinkInRoute(own[a], Dir::UP), sg4::LinkInRoute(nic, Dir::UP)}, false);
    zone->add_route(gateway, hosts[a]->get_netpoint(), nullptr, nullptr,
                    {sg4::LinkInRoute(nic, Dir::DOWN), sg4::LinkInRoute(own[a], Dir::DOWN)}, false);
    for (std::size_t b = a + 1; b < g; ++b) {
      auto* link = zone->create_split_duplex_link(
                           xgmi_link_name(node, static_cast<std::int64_t>(a), static_cast<std::int64_t>(b)),
                           shape_.xgmi_bandwidth)
                       ->set_latency(shape_.intra_latency);
      link->seal();
      zone->add_route(hosts[a]->get_netpoint(), hosts[b]->get_netpoint(), nullptr, nullptr,
                      {sg4::LinkInRoute(link, Dir::UP)}, false);
      zone->add_route(hosts[b]->get_netpoint(), hosts[a]->get_netpoint(), nullptr, nullptr,
                      {sg4::LinkInRoute(link, Dir::DOWN)}, false);
    }
  }
}

}  // namespace aggsim
