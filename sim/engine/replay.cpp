#include "sim/engine/replay.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>

XBT_LOG_EXTERNAL_DEFAULT_CATEGORY(aggsim_engine);

namespace aggsim {

namespace sg4 = simgrid::s4u;

ReplayBook::ReplayBook(StepLog& log, CollectiveLog& calls, int period, std::string refusal)
    : log_(log),
      calls_(calls),
      ranks_(log.ranks()),
      period_(std::max(1, period)),
      refusal_(std::move(refusal)),
      matches_(static_cast<std::size_t>(std::max(0, log.steps())), 0) {
  if (refusal_.empty()) network_ = std::make_unique<LocalNetwork>(ranks_);
}

int ReplayBook::begin(int rank, int step, Comm& comm) {
  if (!refusal_.empty()) return -1;
  max_started_ = std::max(max_started_, step);
  if (steady_from_ < 0 || step < steady_from_) return -1;
  // The step of the steady period in the same phase (step - repeats is a multiple of the period).
  const int repeats = anchor_ - (period_ - (step - anchor_) % period_) % period_;
  comm.replay_over(network_.get(), &simulated_.at(repeats).tapes[static_cast<std::size_t>(rank)].chosen);
  return repeats;
}

void ReplayBook::end_replayed(int rank, int step, int repeats, Comm& comm, int first_slot,
                              const std::vector<int>* call_slots) {
  const StepTape tape = comm.take_tape();
  comm.replay_over(nullptr, nullptr);
  const RankStepRecord& was = log_.at(rank, repeats);
  RankStepRecord& rec = log_.at(rank, step);
  if (!tape.same_transfers(simulated_.at(repeats).tapes[static_cast<std::size_t>(rank)]))
    diverged(rank, step, repeats, "posted other transfers");
  if (rec.bytes_sent != was.bytes_sent || rec.messages_sent != was.messages_sent)
    diverged(rank, step, repeats, "sent other bytes");
  rec.compute_end = rec.start + (was.compute_end - was.start);
  rec.agg_start = rec.start + (was.agg_start - was.start);
  rec.agg_end = rec.start + (was.agg_end - was.start);
  rec.hidden_comm = was.hidden_comm;  // its calls ran as the recorded step's did
  rec.exposed_gather = was.exposed_gather;
  const auto& windows = simulated_.at(repeats).tapes[static_cast<std::size_t>(rank)].calls;
  if (call_slots && call_slots->size() != windows.size()) diverged(rank, step, repeats, "made another number of calls");
  for (std::size_t b = 0; b < windows.size(); ++b)
    calls_.add_window(step, call_slots ? (*call_slots)[b] : first_slot + static_cast<int>(b),
                      windows[b].shifted(rec.start - was.start));
  // Its last message was sent by a rank that started this step before the recorded end.
  if (sg4::Engine::get_clock() > rec.agg_end + simulated_.at(repeats).tolerance)
    diverged(rank, step, repeats, "received its last message after its recorded end");
  sg4::this_actor::sleep_until(rec.agg_end);
}

void ReplayBook::finish(int rank, int step, int repeats, Comm& comm) {
  if (!refusal_.empty()) return;
  if (repeats < 0) {
    StepRecord& r = simulated_[step];
    if (r.tapes.empty()) r.tapes.resize(static_cast<std::size_t>(ranks_));
    r.tapes[static_cast<std::size_t>(rank)] = comm.take_tape();
    if (++r.finished == ranks_) {
      // Computed once here: every replayed rank checks against it, and it reads every rank.
      r.tolerance = tolerance(step);
      close(step);
    }
    return;
  }
  if (++replayed_[step] < ranks_) return;
  // Every rank started this step where the record says, relative to each other.
  const double first = earliest_start(step), first_was = earliest_start(repeats);
  const double tol = tolerance(step);
  for (int r = 0; r < ranks_; ++r)
    if (std::abs((log_.at(r, step).start - first) - (log_.at(r, repeats).start - first_was)) > tol)
      diverged(r, step, repeats, "started at another offset from the other ranks");
  replayed_.erase(step);
  ++steps_replayed_;
}

// The step equals the one a period before (both started on an idle network); once the last period
// of steps all do, the steps not yet begun are replayed.
void ReplayBook::close(int step) {
  const int before = step - period_;
  const bool same = before >= 0 && simulated_.count(before) && idle_start(step) && idle_start(before) &&
                    same_step(step, before);
  matches_[static_cast<std::size_t>(step)] = same;
  if (steady_from_ >= 0) return;
  // Until then only the records a later comparison needs are kept.
  simulated_.erase(simulated_.begin(), simulated_.lower_bound(step - 2 * period_));
  for (int i = 0; i < period_; ++i)
    if (step - i < 0 || !matches_[static_cast<std::size_t>(step - i)]) return;
  steady_from_ = max_started_ + 1;
  anchor_ = step;
  XBT_VERB("steps %d-%d repeat steps %d-%d: steps from %d on are replayed", step - period_ + 1, step,
           before - period_ + 1, before, steady_from_);
}

// No transfer of `step` started before every transfer of the step before had ended (a transfer
// starts once both sides have posted it).
bool ReplayBook::idle_start(int step) const {
  if (step == 0) return true;
  const auto previous = simulated_.find(step - 1);
  if (previous == simulated_.end()) return false;
  double previous_end = -std::numeric_limits<double>::infinity();
  for (const StepTape& t : previous->second.tapes) previous_end = std::max(previous_end, t.last_end);
  for (const StepTape& t : simulated_.at(step).tapes)
    if (t.first_start < previous_end) return false;
  return true;
}

double ReplayBook::earliest_start(int step) const {
  double first = std::numeric_limits<double>::infinity();
  for (int r = 0; r < ranks_; ++r) first = std::min(first, log_.at(r, step).start);
  return first;
}

// Rounding of the absolute clock: every event of a step is computed from the one before on the
// absolute clock, so two identical steps differ by the rounding along their chain of events: 5e-15 s
// and 1.2e-14 s apart (365 and 445 ulps of the clock, up to 2e-13 of the step) for the first steps
// of a 512-rank hierarchical ResNet-50 run, which 64 ulps did not cover. 1e-12 of the clock is 4,500
// to 9,000 ulps, and a thousand times below the bound the README gives for replayed times.
double ReplayBook::tolerance(int step) const {
  double latest = 1e-9;
  for (int r = 0; r < ranks_; ++r) latest = std::max(latest, std::abs(log_.at(r, step).agg_end));
  return 1e-12 * latest;
}

bool ReplayBook::same_step(int a, int b) const {
  const StepRecord& ra = simulated_.at(a);
  const StepRecord& rb = simulated_.at(b);
  const double tol = simulated_.at(std::max(a, b)).tolerance;  // both closed
  const auto near = [tol](double u, double v) { return std::abs(u - v) <= tol; };
  const double first_a = earliest_start(a), first_b = earliest_start(b);
  for (int r = 0; r < ranks_; ++r) {
    const RankStepRecord& x = log_.at(r, a);
    const RankStepRecord& y = log_.at(r, b);
    if (!near(x.start - first_a, y.start - first_b) ||
        !near(x.compute_end - x.start, y.compute_end - y.start) ||
        !near(x.agg_start - x.start, y.agg_start - y.start) ||
        !near(x.agg_end - x.start, y.agg_end - y.start) || !near(x.hidden_comm, y.hidden_comm) ||
        !near(x.exposed_gather, y.exposed_gather))
      return false;
    if (x.bytes_sent != y.bytes_sent || x.messages_sent != y.messages_sent) return false;
    const StepTape& ta = ra.tapes[static_cast<std::size_t>(r)];
    const StepTape& tb = rb.tapes[static_cast<std::size_t>(r)];
    if (!ta.same_transfers(tb) || ta.calls.size() != tb.calls.size()) return false;
    // Each call's transfers ran, and the rank entered and left it, at the same offsets from the
    // rank's start (a replayed step's collectives.csv rows are the record's, shifted).
    for (std::size_t c = 0; c < ta.calls.size(); ++c) {
      const TransferWindow &u = ta.calls[c], &v = tb.calls[c];
      if (u.empty() != v.empty()) return false;
      if (!u.empty() &&
          (!near(u.first_start - x.start, v.first_start - y.start) ||
           !near(u.last_end - x.start, v.last_end - y.start)))
        return false;
      if ((u.part_start <= u.part_end) != (v.part_start <= v.part_end)) return false;
      if (u.part_start <= u.part_end &&
          (!near(u.part_start - x.start, v.part_start - y.start) ||
           !near(u.part_end - x.start, v.part_end - y.start)))
        return false;
    }
  }
  return true;
}

// An exception cannot leave a SimGrid actor cleanly; nothing has been written yet (run folders are
// written after the simulation), so stop here.
void ReplayBook::diverged(int rank, int step, int repeats, const std::string& what) const {
  fmt::print(stderr,
             "aggsim: internal error: replay: on step {}, which repeats step {}, rank {} {}; run with "
             "engine: {{replay: false}} and report the scenario\n",
             step, repeats, rank, what);
  std::fflush(stderr);
  std::_Exit(70);
}

}  // namespace aggsim
