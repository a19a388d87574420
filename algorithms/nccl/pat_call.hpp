#pragma once
// What a communicator's PAT call (pat_schedule.hpp) takes from its plan.
#include "algorithms/nccl/nccl_communicator.hpp"

namespace aggsim {

// NCCL's aggregation factor for the call: from its chunk and each rank's part of a channel.
int pat_call_aggregation(const NcclCallPlan& plan, int ranks);

// Member call.me's part of a PAT call at chunk level (nccl_chunk_call.hpp): every channel walks
// NCCL's steps, one connection per dimension, every piece a message.
struct NcclChunkCall;
void start_pat_chunks(NcclChunkCall& call);

}  // namespace aggsim
