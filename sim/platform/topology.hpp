#pragma once
// Platform generators, one name -> builder table (like the algorithm registry). A builder creates
// the hosts, links and routes of a generated cluster inside the current SimGrid Engine.
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/core/params.hpp"
#include "sim/platform/platform_spec.hpp"

namespace aggsim {

struct ResolvedOverrides;  // sim/platform/platform_overrides.hpp

struct TopologyInfo {
  std::string name;
  std::string summary;
  std::vector<ParamSpec> params;
  // Decodes the generator's own keys against the decoded node shape, without building anything.
  // Throws std::invalid_argument naming the key when the combination is impossible.
  std::function<FabricShape(const NodeShape&, const Params&)> decode;
  // Builds the platform as the Engine's root zone, with the per-host and per-node values of
  // `platform.overrides` applied; must run before any simulation starts.
  std::function<void(const NodeShape&, const FabricShape&, const ResolvedOverrides&)> build;
  // The same platform in a form SimGrid's ns-3 binding understands (one-link routes only); empty
  // when the topology cannot be given to ns-3. May throw std::invalid_argument naming a key.
  std::function<void(const NodeShape&, const FabricShape&, const ResolvedOverrides&)> build_ns3;
};

const std::vector<TopologyInfo>& topology_table();
const TopologyInfo* find_topology(std::string_view name);

// Links between a fat tree's leaves and its first switch level: SimGrid 3.32 creates them first,
// so they are the links whose number (the last in link_from_<a>_<b>_<number>) is below this.
std::int64_t fat_tree_leaf_links(const FatTreeShape& tree);

}  // namespace aggsim
