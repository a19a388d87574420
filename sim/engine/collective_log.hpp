#pragma once
// One record per aggregation call (a step's bucket), folded over the ranks as they report: the
// call's transfer window (from the first transfer any rank received in it to the last) and the
// choice the algorithm reported (sim/api/collective_call.hpp). Records are kept a step at a time,
// for the steps that aggregate; collectives.csv is written from them.
#include <deque>
#include <vector>

#include "sim/api/collective_call.hpp"
#include "sim/comm/comm.hpp"

namespace aggsim {

struct CollectiveRecord {
  TransferWindow window;
  CollectiveChoice choice;
  bool called = false;  // some rank made this call
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

 private:
  CollectiveRecord& slot(int step, int bucket);
  int calls_per_step_;
  std::deque<std::vector<CollectiveRecord>> steps_;
};

}  // namespace aggsim
