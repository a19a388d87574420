#pragma once
// Replay of repeated steps. In synchronous training with deterministic compute and fixed wire
// sizes, a step that starts like an earlier one (the same start offsets between ranks, the network
// idle) and posts the same transfers takes the same time, so simulating it again only repeats work.
//
// Every simulated step leaves a record: each rank's start offset, its compute, aggregation and end
// offsets, bytes and messages, its tape (the transfers it posted and what wait_any chose) and the
// order in which the ranks finished. Once each of the last `period` steps (algorithm.every) equals
// the step one period before it and started on an idle network (no rank posted before every rank
// had ended the previous step), the following steps are replayed. A replayed step runs the same
// algorithm code over the in-process network (Comm::replay_over: no SimGrid transfer, no work
// charged), so every vector is bit for bit what a full simulation computes (the math log and the
// evaluator sum over ranks in rank order, whatever order ranks finish in). Each rank's times are its own
// start plus the recorded step's offsets; it then sleeps until its recorded end, so the next step starts as
// it would. A replayed rank whose transfers differ from the record stops the run with an error.
//
// Times differ from a full simulation's by rounding only: SimGrid computes each event on the
// absolute clock, so even identical simulated steps differ in the last bits of their durations;
// the test bounds the difference (sim/engine/README.md, "Replay of repeated steps").
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "sim/comm/comm.hpp"
#include "sim/comm/local_network.hpp"
#include "sim/engine/collective_log.hpp"
#include "sim/metrics/step_log.hpp"

namespace aggsim {

class ReplayBook {
 public:
  // `refusal`: why this run's steps cannot be replayed ("" when they can). A replayed step's calls
  // get the recorded step's transfer windows in `calls`, shifted as its times are.
  ReplayBook(StepLog& log, CollectiveLog& calls, int period, std::string refusal);
  const std::string& refusal() const { return refusal_; }

  // Rank `rank` begins `step`: the simulated step it repeats, or -1 when it is simulated. Sets the
  // rank's Comm to deliver in-process while it replays.
  int begin(int rank, int step, Comm& comm);
  // A replayed rank's aggregation is done: checks its transfers against the record, sets its times
  // from the record and sleeps until its recorded end. `call_slots`: the collectives.csv slot of
  // each call the rank made, in call order (null: call b is slot first_slot + b).
  void end_replayed(int rank, int step, int repeats, Comm& comm, int first_slot,
                    const std::vector<int>* call_slots = nullptr);
  // The rank has finished the step.
  void finish(int rank, int step, int repeats, Comm& comm);

  int steps_replayed() const { return steps_replayed_; }

 private:
  struct StepRecord {
    std::vector<StepTape> tapes;  // per rank
    int finished = 0;
    double tolerance = 0;  // tolerance(step), kept once every rank has finished it
  };
  void close(int step);
  bool idle_start(int step) const;
  bool same_step(int a, int b) const;
  double earliest_start(int step) const;  // of any rank
  double tolerance(int step) const;
  [[noreturn]] void diverged(int rank, int step, int repeats, const std::string& what) const;

  StepLog& log_;
  CollectiveLog& calls_;
  int ranks_, period_;
  std::string refusal_;
  std::unique_ptr<LocalNetwork> network_;
  std::map<int, StepRecord> simulated_;  // steps being simulated or kept as records
  std::map<int, int> replayed_;          // ranks done with each replayed step
  std::vector<char> matches_;            // per step: equals the step one period before, both started idle
  int max_started_ = -1;
  int steady_from_ = -1;  // first replayed step (-1: none yet)
  int anchor_ = -1;       // the last simulated step of the steady period
  int steps_replayed_ = 0;
};

}  // namespace aggsim
