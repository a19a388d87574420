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

// What of NCCL's choice in a log the model cannot run (empty `what` when it runs all of it).
struct MissedChoice {
  std::string what;
  std::string where;  // "file:line" of the line that names it
};

// How the scenario's algorithm is calibrated (its table entry's; factor steps without one).
const CalibrationCapability& calibration_capability(const Scenario& base);

// Whether the scenario's algorithm runs each point as the log's NCCL ran it
// (CalibrationCapability::follows_logged_choices).
bool follows_logged_choices(const Scenario& base);

// Algorithms that follow the log's choices only: the point runs as NCCL ran it where its log says so (calibrate fits the
// costs of what ran, not of what the model would have chosen): the algorithm and protocol of its
// tuning lines (Measurement::observed) when the model has them, else those the log's NCCL_ALGO /
// NCCL_PROTO force (Measurement::env); the channels of the tuning line, else the communicator's
// channels of the init lines (Measurement::init_channels), else NCCL_MIN/MAX_NCHANNELS.
// `observed_too` false (compare, which predicts NCCL's choice): the log's settings only, which are
// part of the run's set-up as the machine is.
MissedChoice follow_observed_choice(const Scenario& base, const Measurement& m, PointPlan& plan,
                                    bool observed_too = true);

// Checks that the scenario times a bare collective (no workload, layer table or compression).
void check_plain_collective(const Scenario& base, const std::string& verb);

}  // namespace aggsim
