#include "sim/engine/run_progress.hpp"

#include <simgrid/s4u.hpp>

XBT_LOG_EXTERNAL_DEFAULT_CATEGORY(aggsim_engine);

namespace aggsim {

void StepsDone::rank_finished(int step) {
  ++pending_[step];
  // Asynchronous schemes may let a fast rank finish later steps first: count whole prefixes only.
  for (auto it = pending_.find(steps_done_); it != pending_.end() && it->second == ranks_;
       it = pending_.find(steps_done_)) {
    pending_.erase(it);
    XBT_VERB("step %d finished by all %d ranks", steps_done_, ranks_);
    ++steps_done_;
  }
}

WallClockGate::WallClockGate(double interval_s)
    : start_(Clock::now()),
      interval_(std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(interval_s))) {
  next_ = start_ + interval_;
}

bool WallClockGate::due() {
  if (++calls_ % kCallsPerClockRead != 0) return false;
  const auto now = Clock::now();
  if (now < next_) return false;
  next_ = now + interval_;
  return true;
}

double WallClockGate::elapsed_s() const {
  return std::chrono::duration<double>(Clock::now() - start_).count();
}

}  // namespace aggsim
