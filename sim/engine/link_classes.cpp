#include "sim/engine/link_classes.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "sim/engine/network_factors.hpp"
#include "sim/platform/platform.hpp"

namespace aggsim {

namespace sg4 = simgrid::s4u;

namespace {

std::optional<LinkClassCost> route_cost(const Scenario& sc, const RunCalibration* cal, const sg4::Host* a,
                                        const sg4::Host* b, bool same_node, const std::string& name) {
  std::vector<sg4::Link*> links;
  double latency = 0;
  a->route_to(b, links, &latency);
  if (links.empty()) return std::nullopt;
  double bandwidth = std::numeric_limits<double>::infinity();
  for (const sg4::Link* l : links) bandwidth = std::min(bandwidth, l->get_bandwidth());
  LinkClassCost cost{name, latency, bandwidth, false};
  if (sc.network == NetworkPreset::ns3) return std::nullopt;
  const auto factors = route_factors(sc, cal, same_node);
  if (factors) {
    cost.latency_s *= factors->latency;
    cost.bandwidth_Bps *= factors->bandwidth;
  } else {
    cost.calibrated = true;
  }
  return cost;
}

std::string intra_link_name(const sg4::Host* h) { return kIntraLinkNames.name(host_facts(h).intra_link); }

// "2 us", "1.5 ms", "800 ns".
std::string short_duration(double s) {
  if (s >= 1e-3) return fmt::format("{:.4g} ms", s * 1e3);
  if (s >= 1e-6) return fmt::format("{:.4g} us", s * 1e6);
  return fmt::format("{:.4g} ns", s * 1e9);
}

}  // namespace

std::vector<LinkClassCost> effective_link_classes(const Scenario& sc, const RunCalibration* cal,
                                                  const std::vector<sg4::Host*>& hosts, const RankLayout& layout) {
  std::vector<LinkClassCost> out;
  const auto& node = layout.node_of_rank;
  if (hosts.size() < 2 || node.size() != hosts.size()) return out;
  for (std::size_t r = 1; r < hosts.size(); ++r)
    if (node[r] == node[r - 1]) {
      if (auto c = route_cost(sc, cal, hosts[r - 1], hosts[r], true, intra_link_name(hosts[r]))) out.push_back(*c);
      break;
    }
  for (std::size_t r = 1; r < hosts.size(); ++r)
    if (node[r] != node[0]) {
      // Under auto the fabric decides the model; a named preset applies whatever the fabric is.
      const std::string name =
          sc.network == NetworkPreset::auto_by_fabric ? fabric_name(sc.platform.fabric) : "between nodes";
      if (auto c = route_cost(sc, cal, hosts[0], hosts[r], false, name)) out.push_back(*c);
      break;
    }
  return out;
}

std::string describe_link_classes(const std::vector<LinkClassCost>& classes) {
  std::string text;
  for (const auto& c : classes)
    text +=
        fmt::format("{}{} {}, {:.4g} GB/s{}", text.empty() ? "" : "; ", c.name, short_duration(c.latency_s),
                    c.bandwidth_Bps / 1e9, c.calibrated ? " before the calibration's factors" : "");
  return text;
}

std::string link_classes_comment(const Scenario& sc, const std::vector<LinkClassCost>& classes) {
  if (classes.empty()) return "";
  std::string text = fmt::format(
      "# Effective per-hop costs under network {} (the route between two ranks of each "
      "class, after the model's factors):\n",
      network_preset_name(sc.network));
  for (const auto& c : classes)
    text += fmt::format("#   {}: latency {:.17g} s, bandwidth {:.17g} B/s{}\n", c.name, c.latency_s,
                        c.bandwidth_Bps,
                        c.calibrated ? " (before the calibration's size-dependent factors)" : "");
  return text;
}

}  // namespace aggsim
