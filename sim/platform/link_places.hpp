#pragma once
// Where each link of a loaded platform sits, for links.csv: its two ends and its tier.
// Generated platforms: from the generators' link names (ours, and SimGrid 3.32's for the fat-tree,
// torus and dragonfly zones it builds). XML platforms: the ends that are rank hosts, from the
// routes between them (a link a route from host h starts with has end_a = h, one a route to h ends
// with has end_b = h); the other ends and the tier stay empty, since a platform file does not name
// the switches inside a <cluster>.
#include <map>
#include <simgrid/s4u.hpp>
#include <string>
#include <vector>

#include "sim/metrics/link_usage.hpp"
#include "sim/platform/platform_spec.hpp"

namespace aggsim {

// By link name. `rank_hosts[r]` is rank r's host.
std::map<std::string, LinkPlace> link_places(const PlatformSpec& spec, const sg4::Engine& engine,
                                             const std::vector<sg4::Host*>& rank_hosts);

}  // namespace aggsim
