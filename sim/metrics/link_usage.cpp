#include "sim/metrics/link_usage.hpp"

#include <fmt/format.h>
#include <simgrid/plugins/load.h>

#include <algorithm>
#include <numeric>
#include <set>

#include "sim/core/checked.hpp"
#include "sim/core/strings.hpp"

namespace aggsim {

void enable_link_load() {
  sg_link_load_plugin_init();
}

void track_all_links(const sg4::Engine& engine) {
  for (auto* link : engine.get_all_links()) sg_link_load_track(link);
}

LinkTraffic::LinkTraffic(const std::vector<CommSpan>& comms, const std::vector<sg4::Host*>& rank_hosts) {
  // Routed once per (source host, destination host) pair.
  std::map<std::pair<int, int>, std::vector<sg4::Link*>> routes;
  for (const auto& c : comms) {
    if (c.direction != CommDirection::send) continue;
    auto [it, added] = routes.try_emplace({c.rank, c.peer});
    if (added)
      rank_hosts.at(static_cast<std::size_t>(c.rank))
          ->route_to(rank_hosts.at(static_cast<std::size_t>(c.peer)), it->second, nullptr);
    for (const auto* link : it->second) {
      add_saturating(bytes_[link], c.bytes);
      transfers_[link].push_back({c.start, c.end, c.bytes});
    }
  }
}

std::uint64_t LinkTraffic::bytes(const sg4::Link* link) const {
  const auto it = bytes_.find(link);
  return it == bytes_.end() ? 0 : it->second;
}

std::vector<LinkLoad> LinkTraffic::loads() const {
  std::vector<LinkLoad> out;
  for (const auto& [link, transfers] : transfers_) {
    // Rate changes sorted by time; ends before starts at one instant, so nothing overlaps there.
    std::vector<std::pair<double, double>> changes;
    for (const auto& t : transfers) {
      if (t.end <= t.start || t.bytes == 0) continue;  // no area to draw; every rate below is > 0
      const double rate = static_cast<double>(t.bytes) / (t.end - t.start);
      changes.emplace_back(t.start, rate);
      changes.emplace_back(t.end, -rate);
    }
    std::sort(changes.begin(), changes.end());
    LinkLoad load{link->get_name(), {}};
    // The rates in flight, summed afresh in sorted order at each instant: the same messages in
    // flight always give the same load, with no residue left by earlier additions and removals.
    std::multiset<double> in_flight;
    for (std::size_t i = 0; i < changes.size();) {
      const double time = changes[i].first;
      for (; i < changes.size() && changes[i].first == time; ++i) {
        if (changes[i].second > 0)
          in_flight.insert(changes[i].second);
        else
          in_flight.erase(in_flight.find(-changes[i].second));
      }
      const double rate = std::accumulate(in_flight.begin(), in_flight.end(), 0.0);
      if (load.points.empty() || load.points.back().second != rate) load.points.emplace_back(time, rate);
    }
    if (!load.points.empty()) out.push_back(std::move(load));
  }
  std::sort(out.begin(), out.end(),
            [](const LinkLoad& a, const LinkLoad& b) { return natural_less(a.link, b.link); });
  return out;
}

std::string links_csv(const sg4::Engine& engine, const LinkTraffic& traffic, double sim_time,
                      bool with_link_load, const std::map<std::string, LinkPlace>& places) {
  auto links = engine.get_all_links();
  std::sort(links.begin(), links.end(), [](const sg4::Link* a, const sg4::Link* b) {
    return natural_less(a->get_name(), b->get_name());
  });
  std::string out = csv_row({"link", "bandwidth_Bps", "latency_s", "bytes", "utilisation", "peak_utilisation",
                             "simgrid_load_bytes", "end_a", "end_b", "tier"});
  for (const auto* link : links) {
    const double bw = link->get_bandwidth();
    const std::uint64_t bytes = traffic.bytes(link);
    std::string peak, cumulated;
    if (with_link_load) {
      peak = fmt::format("{}", bw > 0 ? std::max(0.0, sg_link_get_max_instantaneous_load(link)) / bw : 0.0);
      cumulated = fmt::format("{}", sg_link_get_cum_load(link));
    }
    const auto place = places.find(link->get_name());
    const LinkPlace none;
    const LinkPlace& where = place == places.end() ? none : place->second;
    out += csv_row(
        {link->get_name(), fmt::format("{}", bw), fmt::format("{}", link->get_latency()),
         fmt::format("{}", bytes),
         fmt::format("{}", sim_time > 0 && bw > 0 ? static_cast<double>(bytes) / (bw * sim_time) : 0.0), peak,
         cumulated, where.end_a, where.end_b, where.tier});
  }
  return out;
}

}  // namespace aggsim
