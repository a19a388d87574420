#pragma once
// Watching a run from outside: how many steps every rank has finished, and a wall-clock gate that
// lets the engine report progress every few seconds without reading the clock on every event.
// Nothing here touches the simulation's results.
#include <chrono>
#include <cstdint>
#include <map>
#include <vector>

namespace aggsim {

// What a progress report says about a running simulation.
struct RunProgress {
  int steps_done = 0;  // steps every rank has finished
  int steps_total = 0;
  double sim_time_s = 0;
  std::uint64_t messages = 0;  // sent so far, all ranks
  double elapsed_s = 0;        // wall time since the simulation started
  bool finished = false;       // the last report, after the simulation ended
};

// Counts the steps all ranks have finished; logs each step boundary (category aggsim_engine).
class StepsDone {
 public:
  explicit StepsDone(int ranks) : ranks_(ranks) {}
  void rank_finished(int step);
  int steps_done() const { return steps_done_; }
  // Ranks that finished `step` (all of them once steps_done() is past it).
  int ranks_done(int step) const {
    if (step < steps_done_) return ranks_;
    const auto it = pending_.find(step);
    return it == pending_.end() ? 0 : it->second;
  }
  // A rank whose training values left the finite numbers in `step` (the first one is kept): the run
  // goes on with zeros in their place, so that no actor computes on inf or NaN, and then fails.
  void note_divergence(int rank, int step) {
    if (diverged_step_ < 0) diverged_rank_ = rank, diverged_step_ = step;
  }
  int diverged_rank() const { return diverged_rank_; }
  int diverged_step() const { return diverged_step_; }  // -1: none

 private:
  int ranks_;
  int steps_done_ = 0;
  int diverged_rank_ = -1, diverged_step_ = -1;
  // Ranks done per step not yet finished by all: bounded by how far ranks drift apart.
  std::map<int, int> pending_;
};

// Says when `interval` seconds of wall time have passed since the last report. The clock is read
// on every `kCallsPerClockRead`-th call only: the engine calls it at every simulated event.
class WallClockGate {
 public:
  static constexpr unsigned kCallsPerClockRead = 16;
  explicit WallClockGate(double interval_s);
  bool due();
  double elapsed_s() const;

 private:
  using Clock = std::chrono::steady_clock;
  Clock::time_point start_, next_;
  Clock::duration interval_;
  unsigned calls_ = 0;
};

}  // namespace aggsim
