#include "sim/engine/merged_flows.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <simgrid/s4u.hpp>
#include <xbt/config.hpp>

#include "sim/engine/network_factors.hpp"

namespace aggsim {

namespace sg4 = simgrid::s4u;

namespace {

// SimGrid's weight of a flow's reverse (ACK) traffic under crosstraffic.
constexpr double kReverseWeight = 0.05;
// The share of a link a ring's merged flow gets under LV08, beside its reverse traffic.
constexpr double kLv08RingShare = 1 / (1 + kReverseWeight);
static_assert(kLv08BandwidthFactor >= kLv08RingShare,
              "LV08 would cap one flow below its share of a link, and a merged flow would be slower");

struct Route {
  std::vector<sg4::Link*> links;
  double latency = 0;
};

Route route_between(const sg4::Host* from, const sg4::Host* to) {
  Route r;
  from->route_to(to, r.links, &r.latency);
  return r;
}

// Why the flows from the ranks of `from` to those of `to` (local index k to k) may not be merged.
std::string pair_refusal(const std::vector<sg4::Host*>& hosts, const std::vector<int>& from,
                         const std::vector<int>& to, double gamma, double share) {
  const std::size_t g = from.size();
  std::vector<Route> routes;
  for (std::size_t k = 0; k < g; ++k)
    routes.push_back(
        route_between(hosts[static_cast<std::size_t>(from[k])], hosts[static_cast<std::size_t>(to[k])]));
  const auto where = fmt::format("from {} to {}", hosts[static_cast<std::size_t>(from[0])]->get_cname(),
                                 hosts[static_cast<std::size_t>(to[0])]->get_cname());
  for (std::size_t k = 1; k < g; ++k)
    if (routes[k].latency != routes[0].latency)
      return fmt::format("the routes {} and from {} have different latencies ({} s and {} s)", where,
                         hosts[static_cast<std::size_t>(from[k])]->get_cname(), routes[0].latency,
                         routes[k].latency);
  auto in_every_route = [&](const sg4::Link* link) {
    return std::all_of(routes.begin(), routes.end(), [&](const Route& r) {
      return std::find(r.links.begin(), r.links.end(), link) != r.links.end();
    });
  };
  double narrowest_shared = -1;
  std::vector<std::vector<double>> own_bandwidths(g);
  for (std::size_t k = 0; k < g; ++k)
    for (const sg4::Link* link : routes[k].links) {
      if (in_every_route(link)) {
        if (narrowest_shared < 0 || link->get_bandwidth() < narrowest_shared)
          narrowest_shared = link->get_bandwidth();
      } else {
        own_bandwidths[k].push_back(link->get_bandwidth());
      }
    }
  if (narrowest_shared < 0)
    return fmt::format("the routes {} share no link, so their flows do not share a bandwidth", where);
  for (std::size_t k = 0; k < g; ++k) {
    if (own_bandwidths[k] != own_bandwidths[0])
      return fmt::format("the links the routes {} and from {} have alone differ in bandwidth", where,
                         hosts[static_cast<std::size_t>(from[k])]->get_cname());
    for (double bw : own_bandwidths[k])
      if (bw < narrowest_shared)
        return fmt::format(
            "a link only one route {} crosses ({} B/s) is narrower than the link the routes "
            "share ({} B/s): one flow would be slower than {} on it",
            where, bw, narrowest_shared, g);
  }
  if (gamma > 0 && routes[0].latency > 0 && gamma / (2 * routes[0].latency) < narrowest_shared * share)
    return fmt::format(
        "the TCP window bound (network/TCP-gamma {} B over twice the {} s latency {}) caps one "
        "flow below the shared link's {} B/s",
        gamma, routes[0].latency, where, narrowest_shared);
  return "";
}

}  // namespace

std::string merged_node_flows_refusal(const Scenario& sc, const RunCalibration* cal, const std::vector<sg4::Host*>& hosts,
                                      const std::vector<std::vector<int>>& nodes,
                                      const std::vector<std::string>& simgrid_args) {
  if (sc.output.trace) return "output.trace records each rank's own transfers";
  if (effective_network(sc) == NetworkPreset::ns3)
    return "network: ns3 models each TCP connection, and one connection is not eight";
  if (cal && cal->has_factors())
    return "the calibration's factor tables depend on the message size, and a merged message is larger";
  for (const auto& arg : simgrid_args)
    if (arg.rfind("--cfg=network/", 0) == 0)
      return fmt::format("{} changes the network model this check assumes", arg);
  // The share of a link the merged flow gets: LV08 caps a flow at 0.97 of its narrowest link, and
  // its reverse traffic leaves it at most 1 / 1.05 of a link (the static_assert above).
  const bool lv08 = effective_network(sc) == NetworkPreset::lv08;
  const double share = lv08 ? kLv08RingShare : 1.0;
  const double gamma = lv08 ? simgrid::config::get_value<double>("network/TCP-gamma") : 0.0;
  if (nodes.size() < 2 || nodes.front().size() < 2) return "";
  const bool reductions_charged = sc.compute.reduce_speed.flops_per_byte(1.0) > 0;
  for (std::size_t n = 0; n < nodes.size(); ++n) {
    const auto& from = nodes[n];
    const auto& to = nodes[(n + 1) % nodes.size()];
    if (reductions_charged)
      for (int r : from)
        if (hosts[static_cast<std::size_t>(r)]->get_speed() !=
            hosts[static_cast<std::size_t>(from[0])]->get_speed())
          return fmt::format("hosts {} and {} reduce at different speeds (compute.reduce_speed)",
                             hosts[static_cast<std::size_t>(from[0])]->get_cname(),
                             hosts[static_cast<std::size_t>(r)]->get_cname());
    std::string why = pair_refusal(hosts, from, to, gamma, share);
    if (!why.empty()) return why;
  }
  return "";
}

}  // namespace aggsim
