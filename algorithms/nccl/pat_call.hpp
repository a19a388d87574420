#pragma once
// What a communicator's PAT call (pat_schedule.hpp) takes from its plan.
#include "algorithms/nccl/nccl_communicator.hpp"

namespace aggsim {

// NCCL's aggregation factor for the call: from its chunk and each rank's part of a channel.
int pat_call_aggregation(const NcclCallPlan& plan, int ranks);

}  // namespace aggsim
