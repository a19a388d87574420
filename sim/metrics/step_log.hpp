#pragma once
// Per-rank, per-step timestamps and counters, filled by the rank actors, summarized per step.
#include <cstdint>
#include <deque>
#include <optional>
#include <vector>

#include "sim/metrics/math_log.hpp"

namespace aggsim {

struct RankStepRecord {
  double start = 0;        // step begins (simulated seconds)
  double compute_end = 0;  // local gradient ready
  double agg_start = 0;    // aggregation entered
  double agg_end = 0;      // aggregation returned: the step's result is usable on this rank
  std::uint64_t bytes_sent = 0;
  std::uint64_t messages_sent = 0;
  // Its aggregation calls' own time (entering a call to leaving it) that ran while it computed this
  // step, inside the step's window (hidden_part, summed over the calls).
  double hidden_comm = 0;
  // Sharded data parallelism: the time of its parameter gathers in the forward and backward passes
  // not hidden behind its compute (they lie inside [start, compute_end]).
  double exposed_gather = 0;
};

// The part of one aggregation call, entered at `from` and left at `to`, that ran while its rank
// computed the step ([start, compute_end]; pass compute_end = to while the rank still computes) and
// inside the step's window, which starts at `window_start`. Without a window start (some rank has
// not ended the previous step's aggregation, so the window starts after `to`) nothing counts.
double hidden_part(double from, double to, double start, double compute_end,
                   std::optional<double> window_start);

// Records are allocated a step at a time, when a rank first reaches the step, so memory follows
// the steps actually run (ranks x 64 bytes each), never the `steps` a scenario asks for.
// References returned by at() stay valid while later steps are added.
class StepLog {
 public:
  // `every` > 1: only steps every-1, 2 every-1, ... aggregate (algorithm.every, local SGD).
  StepLog(int ranks, int steps, int every = 1) : ranks_(ranks), steps_(steps), every_(every) {}
  // Whether the ranks aggregate on `step` (the others train locally, sending nothing).
  bool communicates(int step) const { return (step + 1) % every_ == 0; }
  // Sharded data parallelism's runs report their exposed gathers (RankStepRecord::exposed_gather).
  void report_gathers() { gathers_ = true; }
  bool reports_gathers() const { return gathers_; }
  RankStepRecord& at(int rank, int step);
  // A step no rank has reached reads as zeros.
  const RankStepRecord& at(int rank, int step) const;
  int ranks() const { return ranks_; }
  int steps() const { return steps_; }
  // A rank ended its aggregation of `step` at `at` (its agg_end; a local step's too).
  void aggregation_ended(int step, double at);
  // Where `step`'s window starts (the previous step's end, when every rank ended its aggregation;
  // 0 for step 0); none while some rank is still in the previous step's aggregation. Read while
  // steps are simulated; a replayed step's records are copied (sim/engine/replay.hpp).
  std::optional<double> window_start(int step) const;

 private:
  // When the ranks ended a step's aggregation: how many did, the latest end.
  struct StepEnd {
    int ranks = 0;
    double latest = 0;
  };
  void reach(int step);
  int ranks_, steps_, every_;
  bool gathers_ = false;
  std::deque<std::vector<RankStepRecord>> records_;  // one block of `ranks_` records per step
  std::deque<StepEnd> ends_;                         // one per block of records_
};

// One row of steps.csv. A step's window runs from the previous step's end_time_s (0 for step 0) to
// its own. Ranks are not in lockstep: a rank that finished the previous step early (it sat out a
// gossip exchange, it runs ahead asynchronously, its part of a tree ended first) starts this step
// inside the previous window. The per-rank times below therefore count only what lies inside this
// step's window, so on every row compute_time_s <= step_time_s, comm_time_s <= step_time_s and
// exposed_comm_time_s <= comm_time_s.
struct StepSummary {
  int step = 0;
  bool communicated = true;   // false: a local step (algorithm.every), no aggregation
  double end_time_s = 0;      // when the last rank finished this step
  double step_time_s = 0;     // end_time_s minus the previous step's end_time_s
  double compute_time_s = 0;  // slowest rank's gradient computation, within the window
  double comm_time_s = 0;     // slowest rank's time inside aggregation, within the window
  // Slowest rank's aggregation time not hidden behind its compute, within the window: from the
  // later of compute end and aggregation start to aggregation end (equals comm_time_s when nothing
  // overlaps).
  double exposed_comm_time_s = 0;
  // The aggregation calls' own time that ran while the rank computed, within the window, on the
  // critical rank: the one exposed_comm_time_s is measured on (the first of equals). On that rank
  // exposed + hidden is the time spent in calls (hidden_part, RankStepRecord::hidden_comm).
  double hidden_comm_time_s = 0;
  // Sharded runs (StepLog::reports_gathers): the critical rank's parameter-gather time not hidden
  // behind its compute; it lies inside compute_time_s (gathers run before and during the passes).
  std::optional<double> exposed_gather_time_s;
  std::uint64_t bytes_sent = 0;
  std::uint64_t messages_sent = 0;
  // Held-out evaluation of the averaged model, on evaluated steps of workload runs.
  std::optional<double> loss, accuracy, consensus_distance;
  // What the math plane did to the vectors (MathLog), with math on.
  std::optional<StepMath> math;
};

std::vector<StepSummary> summarize_steps(const StepLog& log);

}  // namespace aggsim
