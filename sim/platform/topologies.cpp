#include <fmt/format.h>

#include "sim/platform/topology.hpp"

namespace aggsim {

// Generators, one file each under sim/platform/.
TopologyInfo cluster_topology_entry();

const std::vector<TopologyInfo>& topology_table() {
  static const std::vector<TopologyInfo> table = {
      cluster_topology_entry(),
  };
  return table;
}

const TopologyInfo* find_topology(std::string_view name) {
  for (const auto& t : topology_table())
    if (t.name == name) return &t;
  return nullptr;
}

}  // namespace aggsim
