#pragma once
// How nccl_allreduce is calibrated: NCCL's protocol parameters (nccl_fit.hpp) fitted to measured
// times, each point run as the log's NCCL ran it, and each measured collective run as NCCL's call
// of that name (its `collective` key).
#include "algorithms/calibration_capability.hpp"

namespace aggsim {

CalibrationCapability nccl_calibration();

}  // namespace aggsim
