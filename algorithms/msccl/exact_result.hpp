#pragma once
// Whether an MSCCL program leaves every rank with the collective's exact result, decided exactly:
// each chunk is the multiset of input chunks it sums (input chunk j of rank q, with how many times),
// never a fingerprint that could collide. Multiplicities saturate at 2^64 - 1 (any count above one
// is already wrong). Values move through the steps in an order the program guarantees
// (MscclStepGraph); a race-free program (race_check.hpp) ends with the same values in every order.
//
// A wrong result names the first wrong rank and output chunk, what it holds against what it should,
// and the line of the step that first made a wrong value of it (a sum holding a chunk twice or a
// chunk of another position; a read of a chunk nothing wrote), else the step that last wrote it.
//
// Cost: buffers are pieces of consecutive chunks with one relative description each
// (chunk_pieces.hpp), so a step costs the pieces its range covers times the runs of consecutive
// input chunks its sums hold, not its chunk count.
#include <string>

#include "algorithms/msccl/step_graph.hpp"

namespace aggsim {

struct MscclWrongResult {
  std::string
      message;  // "file:line: step: the program does not compute an allreduce: rank 0 ..."; "" if exact
  int rank = -1, chunk = -1;
  long long work = 0;  // pieces of chunk ranges and runs of sums visited
};

// Work units (pieces visited and runs merged) the check may spend before it refuses the program.
constexpr long long kMscclResultWork = 1LL << 27;

// Throws InputError at the <algo> line when the check would spend more than kMscclResultWork.
MscclWrongResult check_msccl_result(const MscclStepGraph& graph);

}  // namespace aggsim
