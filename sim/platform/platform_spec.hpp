#pragma once
// Which platform a scenario runs on: a SimGrid XML file or a generator with its parameters.
#include <string>
#include <vector>

#include "sim/core/params.hpp"

namespace aggsim {

struct TopologyInfo;  // sim/platform/topology.hpp

// One entry of `platform.overrides`: the hosts or nodes it selects and the values it gives them
// (keys of override_param_specs(), sim/platform/platform_overrides.hpp). Later entries win.
struct PlatformOverride {
  enum class Selector { hosts, nodes };
  Selector selector = Selector::hosts;
  // As given: host names, each possibly with [a-b,c] ranges ("node-3-gpu-[0-7]"), or node ranges
  // ("0-3", "7").
  std::vector<std::string> items;
  Params values;
};

// The fabric between nodes (`platform.fabric`, or an XML platform's root-zone property
// aggsim_fabric): what `network: auto` models the links between nodes as.
enum class Fabric { infiniband, roce, ethernet };
const char* fabric_name(Fabric fabric);
// The names parse_fabric accepts, in the order messages and the key reference list them.
std::vector<std::string> fabric_names();
// Throws std::invalid_argument naming the accepted values.
Fabric parse_fabric(const std::string& name);

struct PlatformSpec {
  std::string file;      // SimGrid platform XML (as found on disk); empty when generated
  std::string topology;  // generator name (cluster, fat_tree, torus, dragonfly); empty for a file
  const TopologyInfo* generator = nullptr;  // the table entry of `topology`; null for a file
  Params params;                            // the generator's parameters
  std::vector<PlatformOverride> overrides;  // generated platforms only
  Fabric fabric = Fabric::infiniband;       // resolved: the key, else the XML's property, else infiniband
  // A generated platform's shape, decoded once by the loader: GPUs (ranks) per node, and whether
  // its size was given as `hosts` rather than `nodes`. 1 and false for a platform file.
  int gpus_per_node = 1;
  bool sized_by_hosts = false;
  // Whether a generated platform's GPUs sit on a switch that reduces (platform.nvswitch); false for
  // a file, whose hosts say so in a property read when the platform is built.
  bool nvswitch = false;
};

}  // namespace aggsim
