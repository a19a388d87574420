#pragma once
// links.csv: what each link of the platform carried over the run, one row per link:
//  - bytes: the messages' wire bytes routed over the link (exact: each message counted on every
//    link of its route, from Host::route_to); utilisation = bytes / (bandwidth * simulated time);
//  - peak_utilisation: the highest instantaneous load / bandwidth SimGrid's flow model reached;
//  - simgrid_load_bytes: SimGrid's link-load plugin's integral of the load over time. It also
//    counts the model's reverse TCP traffic (LV08) and a transfer's latency phase at the rate the
//    transfer then gets, so it exceeds `bytes` a little; it shows where the model saw the link busy.
//  The last two come from SimGrid's link-load plugin, available on generated platforms only (on an
//  XML platform they are empty cells).
//  - end_a, end_b, tier: where the link sits (LinkPlace, filled in by the platform layer).
// The same routing gives each link's load over time for the trace's counter tracks.
#include <map>
#include <simgrid/s4u.hpp>
#include <string>
#include <vector>

#include "sim/metrics/trace.hpp"

namespace aggsim {

namespace sg4 = simgrid::s4u;

// The two things a link joins and its tier (intra_node, edge, core, torus, ...). For one direction
// of a full-duplex link (names ending _UP or _DOWN) traffic flows from end_a to end_b. Empty
// strings where the platform does not say (sim/output/README.md, "The run folder").
struct LinkPlace {
  std::string end_a, end_b, tier;
};

// Starts SimGrid's link-load plugin; call after the Engine exists and before the platform is loaded.
void enable_link_load();
// Tracks every link of the loaded platform.
void track_all_links(const sg4::Engine& engine);

// The messages' bytes routed over every link they cross, with each message's transfer interval.
class LinkTraffic {
 public:
  // `rank_hosts[r]` is rank r's host; only the send side of `comms` is used.
  LinkTraffic(const std::vector<CommSpan>& comms, const std::vector<sg4::Host*>& rank_hosts);
  std::uint64_t bytes(const sg4::Link* link) const;
  // Per link crossed (natural name order): the average rate of each message over its transfer
  // (bytes / (end - start)), summed over the messages in flight. Integrated over time it gives the
  // link's bytes; transfers of zero duration add bytes but no area.
  std::vector<LinkLoad> loads() const;

 private:
  struct Transfer {
    double start, end;
    std::uint64_t bytes;
  };
  std::map<const sg4::Link*, std::vector<Transfer>> transfers_;
  std::map<const sg4::Link*, std::uint64_t> bytes_;
};

// One row per link (natural name order). `with_link_load`: the links were tracked by the link-load
// plugin. `places`: by link name; a link missing from it gets empty end and tier cells.
std::string links_csv(const sg4::Engine& engine, const LinkTraffic& traffic, double sim_time,
                      bool with_link_load, const std::map<std::string, LinkPlace>& places);

}  // namespace aggsim
