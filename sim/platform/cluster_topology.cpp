// A flat cluster: every host has a private full-duplex link (split up/down) to one non-blocking
// switch, so a transfer host-i -> host-j crosses host-i's up link and host-j's down link:
// latency 2*latency, bandwidth `bandwidth`. No backbone by default: a backbone that never limits
// anything still ties all flows together in SimGrid's solver and slows big runs several-fold.
#include <simgrid/s4u.hpp>

#include <fmt/format.h>

#include "sim/platform/platform.hpp"
#include "sim/platform/topology.hpp"

namespace aggsim {

namespace sg4 = simgrid::s4u;

TopologyInfo cluster_topology_entry() {
  TopologyInfo info;
  info.name = "cluster";
  info.summary = "hosts on one non-blocking switch, a private full-duplex link each";
  info.params = {
      ParamSpec("hosts", ParamKind::integer, "", "number of hosts").needed().between(1, 1 << 22),
      ParamSpec("bandwidth", ParamKind::bandwidth, "10Gbps", "each host's link bandwidth (per direction)"),
      ParamSpec("latency", ParamKind::duration, "1us", "each host's link latency (a transfer crosses two links)"),
      ParamSpec("speed", ParamKind::speed, "100Gf", "host compute speed"),
      ParamSpec("backbone_bandwidth", ParamKind::bandwidth, "", "optional shared backbone crossed by every transfer"),
      ParamSpec("backbone_latency", ParamKind::duration, "0s", "backbone latency"),
  };
  info.host_count = [](const Params& p) { return p.integer("hosts"); };
  info.build = [](const Params& p) {
    auto* zone = sg4::create_star_zone("cluster");
    const double bw = p.real("bandwidth"), lat = p.real("latency");
    sg4::Link* backbone = nullptr;
    if (p.has("backbone_bandwidth")) {
      backbone = zone->create_link("backbone", p.real("backbone_bandwidth"))->set_latency(p.real("backbone_latency"));
      backbone->seal();
    }
    const auto hosts = p.integer("hosts");
    for (std::int64_t i = 0; i < hosts; ++i) {
      auto* host = zone->create_host(fmt::format("host-{}", i), p.real("speed"));
      host->seal();
      auto* link = zone->create_split_duplex_link(fmt::format("host-{}_link", i), bw)->set_latency(lat);
      link->seal();
      // Up to the switch (through the backbone, if any), then down: the backbone is crossed once.
      std::vector<sg4::LinkInRoute> up = {sg4::LinkInRoute(link, sg4::LinkInRoute::Direction::UP)};
      if (backbone) up.emplace_back(backbone);
      zone->add_route(host->get_netpoint(), nullptr, nullptr, nullptr, up, false);
      zone->add_route(nullptr, host->get_netpoint(), nullptr, nullptr,
                      {sg4::LinkInRoute(link, sg4::LinkInRoute::Direction::DOWN)}, false);
    }
    zone->seal();
  };
  return info;
}

}  // namespace aggsim
