#pragma once
// What aggsim checks of an MSCCL program before anything is simulated, in this order:
//  - it finishes: the schedule runs in-process, without data or time, with the runtime's bounded
//    connections (no threadblock blocked for ever: a receive nobody feeds, a send whose slots the
//    receiver never frees, a dependency that never comes), for every distinct cut of its steps
//    into calls (the runtime's maxAllowedCount depends on the call's size);
//  - it has no race (race_check.hpp): no two threadblocks touch a chunk in an order the program
//    leaves open, one of them writing it;
//  - every rank ends with the collective's exact result (exact_result.hpp): every output chunk of an
//    all-reduce reduced from every rank's chunk exactly once, every chunk of an all-gather the right
//    rank's, compared as exact multisets.
// One loop iteration of the runtime decides all: every iteration runs the same steps on the same
// connections (only the bytes differ), starts from empty connections and leaves them empty.
//
// Messages move in bulk (a step moves as many as its connections allow at once, and a sender and a
// receiver both waiting on one connection exchange what they can in one move): whether a schedule of
// bounded FIFOs finishes, and where it stops if not, does not depend on the order its threadblocks
// move in, so a cut costs its steps, not its messages.
#include <cstdint>
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

// The runtime's loop iterations for a collective of `total_bytes`: each of the program's chunks in
// pieces of NCCL's ring chunk (at least 1). Each iteration is simulated message by message, so a
// scenario whose calls need more than kMscclMaxLoops is refused at its size.
std::int64_t msccl_loops(const MscclProgram& p, double total_bytes);
constexpr std::int64_t kMscclMaxLoops = std::int64_t{1} << 20;

// What the checks found about a program that passes them (a deadlock or a race throws).
struct MscclVerdict {
  std::string wrong_result;  // "" when every rank ends with the exact result, else the message
  int wrong_rank = -1, wrong_chunk = -1;
  int call_cuts = 0;             // distinct cuts of the steps into calls run for deadlocks
  int sharing_threadblocks = 0;  // threadblocks sharing a chunk with another, one of them writing
  // What the checks cost: threadblock advances of the deadlock runs, pieces of chunk ranges and runs
  // of sums visited, clock entries compared (tests check it grows with the steps, not the chunks).
  long long work = 0;
};

// Every check above. A deadlock or a race throws InputError; a wrong result is returned.
MscclVerdict verify_msccl_program(const MscclProgram& p);

// The verdict and the checks passed in a few lines, for `aggsim validate`.
std::string describe_msccl_verdict(const MscclProgram& p, const MscclVerdict& v);

}  // namespace aggsim
