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
#include <simgrid/s4u.hpp>
#include <string>
#include <vector>

#include "sim/metrics/trace.hpp"

namespace aggsim {

namespace sg4 = simgrid::s4u;

// Starts SimGrid's link-load plugin; call after the Engine exists and before the platform is loaded.
void enable_link_load();
// Tracks every link of the loaded platform.
void track_all_links(const sg4::Engine& engine);
// One row per link (natural name order). `rank_hosts[r]` is rank r's host. `with_link_load`: the
// links were tracked by the link-load plugin.
std::string links_csv(const sg4::Engine& engine, const std::vector<CommSpan>& comms,
                      const std::vector<sg4::Host*>& rank_hosts, double sim_time, bool with_link_load);

}  // namespace aggsim
