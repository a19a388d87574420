#pragma once
// How nccl_allreduce runs a measured point as the log's NCCL ran it (CalibrationCapability::
// logged_choices): calibrate fits the costs of what ran, not of what the model would have chosen.
#include "algorithms/calibration_capability.hpp"

namespace aggsim {

// The algorithm and protocol of the point's tuning lines (LoggedPoint::observed) when the model has
// them, else those the log's NCCL_ALGO / NCCL_PROTO force; the channels of the tuning line, else the
// communicator's channels of the init lines, else NCCL_MIN/MAX_NCHANNELS. `observed_too` false
// (compare, which predicts NCCL's choice): the log's settings only, which are part of the run's
// set-up as the machine is.
MissedChoice follow_nccl_logged_choice(const LoggedPoint& point, const PlanScenario& scenario, bool observed_too,
                                       std::vector<std::string>& sets);

// Says ("note: ...", "warning: ...") what the logs' NCCL settings make the points run; throws
// InputError where the scenario's algorithm.nccl_algorithm or algorithm.protocol contradicts a log's
// settings or choices.
void check_nccl_logged_choices(const std::vector<LoggedPoint>& points, const PlanScenario& scenario,
                               const std::function<void(const std::string&)>& say);

LoggedChoices nccl_logged_choices();

}  // namespace aggsim
