#pragma once
// One record per aggregation call (a step's bucket), folded over the ranks as they report: the
// call's window (its transfers, and when its ranks entered and left it: TransferWindow) and the
// choice the algorithm reported (sim/api/collective_call.hpp). Records are kept a step at a time,
// for the steps that aggregate; collectives.csv is written from them.
#include <deque>
#include <optional>
#include <vector>

#include "sim/api/collective_call.hpp"
#include "sim/comm/comm.hpp"

namespace aggsim {

struct CollectiveRecord {
  TransferWindow window;
  CollectiveChoice choice;
  bool called = false;  // some rank made this call
};

// A call's record as collectives.csv gives it: what the call cost, in time.
struct CallSpan {
  double start = 0, end = 0;
  double seconds() const { return end - start; }
};

class CollectiveLog {
 public:
  explicit CollectiveLog(int calls_per_step) : calls_per_step_(calls_per_step) {}
  // Rank `rank`'s part of call `bucket` of `step`. The first rank to report a choice sets it (every
  // rank reports the same).
  void report(int step, int bucket, const TransferWindow& window, const CollectiveChoice& choice);
  // Adds a window to a call already reported (a replayed step's recorded transfers).
  void add_window(int step, int bucket, const TransferWindow& window);
  int calls_per_step() const { return calls_per_step_; }
  // Steps with records (the highest step reported plus one).
  int steps_recorded() const { return static_cast<int>(steps_.size()); }
  // A step no rank has reported reads as calls never made.
  const CollectiveRecord& at(int step, int bucket) const;
  // The span of a call that transferred something (none otherwise): its window
  // (TransferWindow::call_start, call_end), begun no earlier than the call before it ended. The
  // ranks' calls follow one another, and what a rank that finished one call early does for the next
  // while the others finish belongs to the pipeline between them: so back-to-back calls take, one
  // after the other, the time they add to the run (as nccl-tests times them), and a step of one
  // call and no compute lasts as long as its call.
  std::optional<CallSpan> span(int step, int bucket) const;

 private:
  CollectiveRecord& slot(int step, int bucket);
  int calls_per_step_;
  std::deque<std::vector<CollectiveRecord>> steps_;
};

}  // namespace aggsim
