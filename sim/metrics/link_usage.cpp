#include "sim/metrics/link_usage.hpp"

#include <fmt/format.h>
#include <simgrid/plugins/load.h>

#include <algorithm>
#include <map>

#include "sim/core/strings.hpp"

namespace aggsim {

void enable_link_load() {
  sg_link_load_plugin_init();
}

void track_all_links(const sg4::Engine& engine) {
  for (auto* link : engine.get_all_links()) sg_link_load_track(link);
}

std::string links_csv(const sg4::Engine& engine, const std::vector<CommSpan>& comms,
                      const std::vector<sg4::Host*>& rank_hosts, double sim_time, bool with_link_load) {
  // Bytes per (source host, destination host), then routed once per pair.
  std::map<std::pair<int, int>, std::uint64_t> pair_bytes;
  for (const auto& c : comms)
    if (c.direction == CommDirection::send) pair_bytes[{c.rank, c.peer}] += c.bytes;
  std::map<const sg4::Link*, std::uint64_t> routed;
  for (const auto& [pair, bytes] : pair_bytes) {
    std::vector<sg4::Link*> route;
    rank_hosts.at(static_cast<std::size_t>(pair.first))
        ->route_to(rank_hosts.at(static_cast<std::size_t>(pair.second)), route, nullptr);
    for (const auto* link : route) routed[link] += bytes;
  }

  auto links = engine.get_all_links();
  std::sort(links.begin(), links.end(), [](const sg4::Link* a, const sg4::Link* b) {
    return natural_less(a->get_name(), b->get_name());
  });
  std::string out = "link,bandwidth_Bps,latency_s,bytes,utilisation,peak_utilisation,simgrid_load_bytes\n";
  for (const auto* link : links) {
    const double bw = link->get_bandwidth();
    const auto it = routed.find(link);
    const std::uint64_t bytes = it == routed.end() ? 0 : it->second;
    std::string plugin_columns = ",";
    if (with_link_load) {
      const double peak = std::max(0.0, sg_link_get_max_instantaneous_load(link));
      plugin_columns = fmt::format("{},{}", bw > 0 ? peak / bw : 0.0, sg_link_get_cum_load(link));
    }
    out += fmt::format("{},{},{},{},{},{}\n", link->get_name(), bw, link->get_latency(), bytes,
                       sim_time > 0 && bw > 0 ? static_cast<double>(bytes) / (bw * sim_time) : 0.0,
                       plugin_columns);
  }
  return out;
}

}  // namespace aggsim
