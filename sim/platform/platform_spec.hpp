#pragma once
// Which platform a scenario runs on: a SimGrid XML file or a generator with its parameters.
#include <string>

#include "sim/core/params.hpp"

namespace aggsim {

struct TopologyInfo;  // sim/platform/topology.hpp

struct PlatformSpec {
  std::string file;      // SimGrid platform XML (as found on disk); empty when generated
  std::string topology;  // generator name (cluster, fat_tree, torus, dragonfly); empty for a file
  const TopologyInfo* generator = nullptr;  // the table entry of `topology`; null for a file
  Params params;                            // the generator's parameters
};

}  // namespace aggsim
