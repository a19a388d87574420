#pragma once
// An MSCCL program's schedule executed in-process, without time: every threadblock runs its steps in
// order, waits for its dependency, and moves messages over its connections, each holding at most the
// runtime's slots. It answers two questions before anything is simulated:
//  - does the program finish (no threadblock blocked for ever: a receive nobody feeds, a send whose
//    slots the receiver never frees, a dependency that never comes), and
//  - does every rank end with the collective's exact result: every output chunk of an all-reduce
//    reduced from every rank's chunk exactly once, every chunk of an all-gather the right rank's.
// Chunks carry a 64-bit fingerprint of the contributions they hold (a sum of random weights, one
// per input chunk: reducing adds them), so a run costs O(messages); a wrong result is then
// recounted exactly (which rank's chunk, how many times) to name what the first wrong chunk holds.
//
// One loop iteration of the runtime is enough: every iteration runs the same steps on the same
// connections (only the bytes differ), starts from empty connections and leaves them empty. A
// step of `cnt` chunks is cut into calls of at most the runtime's maxAllowedCount chunks, which
// depends on the call's size: every distinct cut of the program's step counts is checked.
#include <string>

#include "algorithms/msccl/program.hpp"

namespace aggsim {

// How the runtime moves a call of a step: at most `slots` slices in flight per connection (its
// FIFO of NCCL_STEPS steps), `slices` per call (Simple sends a chunk in 2 slices of 2 steps each,
// LL and LL128 in one step), each call carrying at most `chunk_bytes` of data per loop iteration
// (NCCL's ring chunk: the runtime's chunkEffectiveSize).
struct MscclPipe {
  int slots = 4;
  int slices = 2;
  double chunk_bytes = 0;
};
MscclPipe msccl_pipe(Protocol p);

// The MSCCL runtime's limit on chunks per call (MSCCL_MAX_COUNT - 1).
constexpr int kMscclMaxCallChunks = 71;

// The chunks one call may carry for a collective of `total_bytes` (the runtime's nBytes: an
// all-gather's whole output), the runtime's maxAllowedCount.
int msccl_max_call_chunks(const MscclProgram& p, double total_bytes);

// What a run of the schedule found.
struct MscclScheduleResult {
  bool finished = false;
  std::string problem;  // "file:line: key: message" when not finished or the result is wrong
};

// Runs the schedule with calls of at most `max_call_chunks` chunks and checks the result.
MscclScheduleResult run_msccl_schedule(const MscclProgram& p, int max_call_chunks);

// Runs the schedule for every distinct cut of its steps into calls. A deadlock throws InputError
// naming each blocked threadblock, its step and what it waits for; a wrong result is returned as
// its message, naming the first wrong output chunk ("file:line: algo: ...: rank 3 output chunk 5
// misses rank 6; holds rank 2 twice"), and "" when every rank ends with the exact result.
std::string verify_msccl_program(const MscclProgram& p);

}  // namespace aggsim
