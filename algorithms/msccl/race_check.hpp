#pragma once
// Races in an MSCCL program: two steps of different threadblocks of one GPU that touch one chunk of
// its buffers, at least one of them writing it, with neither ordered before the other by the
// program (its threadblocks' order, dependencies, and chains of messages: MscclStepGraph). The
// runtime may run such steps in either order, so the result depends on timing; the first race found
// is an InputError naming both steps:
//   "prog.xml:48: step: the program races: gpu 1 tb 1 step 3 (line 48) reads s[1] while gpu 1 tb 0
//    step 7 (line 40) writes it, with no dependency (nor chain of messages) between them: ..."
//
// How: the steps are visited in the graph's order with vector clocks over the threadblocks that
// share a chunk with another one where someone writes (found first, range by range); each chunk range
// keeps its last write and the reads since (FastTrack's rule: a race with any earlier access is a race
// with one of those). Cost: the pieces the steps' ranges cut, plus those threadblocks times the steps
// that receive or wait for a dependency (at most kMscclRaceClockEntries, else the program is refused).
#include "algorithms/msccl/step_graph.hpp"

namespace aggsim {

constexpr long long kMscclRaceClockEntries = 1LL << 27;

// What the check found besides races (it throws on the first one).
struct MscclRaceFacts {
  int sharing_threadblocks = 0;  // threadblocks that share a chunk with another, one of them writing
  long long clock_entries = 0;   // compared while joining clocks, plus pieces of chunk ranges visited
};

MscclRaceFacts check_msccl_races(const MscclStepGraph& graph);

}  // namespace aggsim
