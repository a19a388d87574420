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

std::optional<CallSpan> CollectiveLog::span(int step, int bucket) const {
  const CollectiveRecord& r = at(step, bucket);
  if (!r.called || r.window.empty()) return std::nullopt;
  CallSpan span{r.window.call_start(), r.window.call_end()};
  // The call before it that transferred something (in step, then bucket order).
  for (int s = step, b = bucket - 1; s >= 0; --s, b = calls_per_step_ - 1)
    for (; b >= 0; --b) {
      const CollectiveRecord& before = at(s, b);
      if (!before.called || before.window.empty()) continue;
      span.start = std::min(span.end, std::max(span.start, before.window.call_end()));
      return span;
    }
  return span;
}

}  // namespace aggsim
