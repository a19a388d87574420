#pragma once
// What a transfer costs on each class of link the ranks use, after the network model's factors:
// between two GPUs of one node (NVLink or PCIe) and between nodes (the fabric). Shown in the run's
// start line and in resolved.yaml, so a user sees what `network: auto` (or any preset) made of the
// platform's numbers.
#include <optional>
#include <simgrid/s4u.hpp>
#include <string>
#include <vector>

#include "algorithms/calibration_capability.hpp"
#include "sim/api/rank_layout.hpp"
#include "sim/scenario/scenario.hpp"

namespace aggsim {

struct LinkClassCost {
  std::string name;          // "nvlink", "pcie", "infiniband", ...
  double latency_s = 0;      // the route's latency x the latency factor
  double bandwidth_Bps = 0;  // its narrowest link x the bandwidth factor
  bool calibrated = false;   // factors depend on the size (a calibration): values as written
};

// One entry per class the ranks' hosts use: the first node holding two ranks gives the intra-node
// route, rank 0 and the first rank of another node the route between nodes. `cal`: what the run
// receives of its calibration (null: none).
std::vector<LinkClassCost> effective_link_classes(const Scenario& sc, const RunCalibration* cal,
                                                  const std::vector<simgrid::s4u::Host*>& rank_hosts,
                                                  const RankLayout& layout);

// "nvlink 2 us, 300 GB/s; infiniband 4 us, 12.5 GB/s" (empty when no class applies, as under ns-3).
std::string describe_link_classes(const std::vector<LinkClassCost>& classes);
// The same as YAML comment lines for resolved.yaml, with exact values.
std::string link_classes_comment(const Scenario& sc, const std::vector<LinkClassCost>& classes);

}  // namespace aggsim
