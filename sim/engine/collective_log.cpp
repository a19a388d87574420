#include "sim/engine/collective_log.hpp"

#include <stdexcept>

namespace aggsim {

CollectiveRecord& CollectiveLog::slot(int step, int bucket) {
  if (step < 0 || bucket < 0 || bucket >= calls_per_step_)
    throw std::out_of_range("collective log: step or bucket out of range");
  while (steps_.size() <= static_cast<std::size_t>(step))
    steps_.emplace_back(static_cast<std::size_t>(calls_per_step_));
  return steps_[static_cast<std::size_t>(step)][static_cast<std::size_t>(bucket)];
}

void CollectiveLog::report(int step, int bucket, const TransferWindow& window,
                           const CollectiveChoice& choice) {
  CollectiveRecord& r = slot(step, bucket);
  r.window.add(window);
  const bool chosen = !choice.nccl_algorithm.empty() || !choice.protocol.empty() || choice.channels > 0;
  const bool had = !r.choice.nccl_algorithm.empty() || !r.choice.protocol.empty() || r.choice.channels > 0;
  if (chosen && !had) r.choice = choice;
  r.called = true;
}

void CollectiveLog::add_window(int step, int bucket, const TransferWindow& window) {
  slot(step, bucket).window.add(window);
}

const CollectiveRecord& CollectiveLog::at(int step, int bucket) const {
  static const CollectiveRecord none{};
  if (step < 0 || bucket < 0 || bucket >= calls_per_step_)
    throw std::out_of_range("collective log: step or bucket out of range");
  if (static_cast<std::size_t>(step) >= steps_.size()) return none;
  return steps_[static_cast<std::size_t>(step)][static_cast<std::size_t>(bucket)];
}

}  // namespace aggsim
