#include <fmt/format.h>

#include "sim/platform/topology.hpp"

namespace aggsim {

// Generators, one file each under sim/platform/.
TopologyInfo cluster_topology_entry();
TopologyInfo fat_tree_topology_entry();
TopologyInfo torus_topology_entry();
TopologyInfo dragonfly_topology_entry();

const std::vector<TopologyInfo>& topology_table() {
  static const std::vector<TopologyInfo> table = {
      cluster_topology_entry(),
      fat_tree_topology_entry(),
      torus_topology_entry(),
      dragonfly_topology_entry(),
  };
  return table;
}

const TopologyInfo* find_topology(std::string_view name) {
  for (const auto& t : topology_table())
    if (t.name == name) return &t;
  return nullptr;
}

}  // namespace aggsim
