#pragma once
// When one flow may stand for several, and nothing is lost by it (no trace, which shows each rank's
// transfers) (hierarchical_allreduce's `node_flows: merged`): the g ranks
// of a node each send an equal part to the rank of the same local index on the next node, at the
// same time, and the node's first rank sends all g parts as one flow instead. Under SimGrid's flow
// models (max-min sharing; LV08 and the alpha_beta preset) that flow takes exactly the time of the
// g separate ones when
//   - the factors do not depend on the size (no calibration tables, no --cfg=network/... flags),
//   - the g routes have the same latency and share the narrowest link of their shared part, every
//     link a route has alone is at least as wide as that link, and these links match rank by rank
//     (so g flows get g equal shares of the shared link, which the merged flow gets whole),
//   - the TCP window bound (network/TCP-gamma / (2 x latency)) does not cap the merged flow below
//     that link, and LV08's bandwidth factor does not either: with every node sending and
//     receiving at once (a ring), the link gives a flow at most 1 / 1.05 of itself, the 0.05 being
//     the reverse ACK load, under LV08's factor 0.97,
//   - the ranks of a node reduce at the same speed (compute.reduce_speed charged on equal hosts).
// Where chunks split unevenly (sizes one float apart), separate flows end a few ns apart, and the
// lv08 preset's completion precision (simulation.hpp) merges such ends; one flow has none to merge.
// Times then differ by up to that precision for each inter-node ring step (1.1e-9 s in 0.0132 s on
// a dragonfly), the preset's own bound against plain LV08. Without that precision (alpha_beta, or
// network: auto on infiniband or roce) the separate flows' ends stay apart by as much: the same
// bound holds (1.9e-8 s in 0.0094 s on a torus of 16 x 4 GPUs). tests/sim/test_merged_node_flows.cpp
// checks times against separate flows; sim/engine/README.md, "Merged node flows".
#include <string>
#include <vector>

#include "algorithms/calibration_capability.hpp"
#include "sim/scenario/scenario.hpp"

namespace simgrid::s4u {
class Host;
}

namespace aggsim {

// "" when merged node flows keep the times of separate ones on this platform and network, else the
// first reason why not (naming the nodes and links). `nodes`: the ranks of each node, each node
// sending to the next (the last to the first), rank k of one to rank k of the next.
// `cal`: what the run receives of its calibration (null: none).
std::string merged_node_flows_refusal(const Scenario& sc, const RunCalibration* cal,
                                      const std::vector<simgrid::s4u::Host*>& hosts,
                                      const std::vector<std::vector<int>>& nodes,
                                      const std::vector<std::string>& simgrid_args);

}  // namespace aggsim
