#pragma once
// How one measured point is simulated: the --set overrides that turn the user's scenario into
// that collective at that size and scale, and what to divide the simulated time by.
#include <string>
#include <vector>

#include "algorithms/calibration_capability.hpp"
#include "sim/calibrate/measurement.hpp"
#include "sim/scenario/scenario.hpp"

namespace aggsim {

struct PointPlan {
  std::vector<std::string> sets;  // --set key=value for `aggsim run`
  double divisor = 1;             // the measured operation is this fraction of the simulated run
  double message_bytes = 0;       // size of the messages the ranks exchange (picks the factor step)
  bool inter_node = false;        // messages cross nodes (the inter-node factors apply)
};

// The measured collective runs as the algorithm's calibration capability plans it
// (CalibrationCapability::plan: message_level_plan, or NCCL's call of that name). `keep_platform`:
// the scenario's ranks and platform as they are (aggsim perf), else the measurement's ranks and nodes.
// Throws InputError (naming the measurement's file:line) for points the scenario cannot express.
PointPlan plan_point(const Scenario& base, const Measurement& m, bool keep_platform = false);

// How the scenario's algorithm is calibrated (its table entry's; factor steps without one).
const CalibrationCapability& calibration_capability(const Scenario& base);

// Whether the scenario's algorithm runs each point as the log's library ran it
// (CalibrationCapability::logged_choices).
bool follows_logged_choices(const Scenario& base);

// What a measured point's log says of its calls, and the scenario, as the capability reads them.
LoggedPoint logged_point(const Measurement& m);
PlanScenario plan_scenario(const Scenario& base);

// Algorithms that follow the log's choices only (CalibrationCapability::logged_choices): the point
// runs as the log's library ran it where its log says so (calibrate fits the costs of what ran, not
// of what the model would have chosen). `observed_too` false (compare, which predicts the library's
// choice): the log's settings only, which are part of the run's set-up as the machine is.
MissedChoice follow_observed_choice(const Scenario& base, const Measurement& m, PointPlan& plan,
                                    bool observed_too = true);

// Checks that the scenario times a bare collective (no workload, layer table or compression).
void check_plain_collective(const Scenario& base, const std::string& verb);

}  // namespace aggsim
