#pragma once
// Named systems (`platform: {system: dgx_h100, nodes: 4}`): a machine as its vendor builds it, given
// as the generator keys it stands for, each value with the public source it comes from. Keys the
// scenario gives override the system's.
#include <string>
#include <utility>
#include <vector>

namespace aggsim {

struct SystemInfo {
  std::string name;
  std::string summary;
  // Generator keys and their values, as a scenario would write them (gpus_per_node, gpu,
  // intra_bandwidth, nvswitch, nics_per_node, nic_bandwidth, bandwidth, gpu_nic_path).
  std::vector<std::pair<std::string, std::string>> values;
  std::string fabric;                // between nodes: infiniband | roce | ethernet
  std::vector<std::string> sources;  // where each value comes from
};

// The systems, in the order `aggsim list --systems` prints them.
const std::vector<SystemInfo>& system_table();
const SystemInfo* find_system(const std::string& name);

// The topology a system runs on when the scenario names none: a full-bisection fat tree.
constexpr const char* kSystemTopology = "fat_tree";

}  // namespace aggsim
