#include "sim/metrics/step_log.hpp"

#include <algorithm>
#include <stdexcept>

#include "sim/core/checked.hpp"

namespace aggsim {

RankStepRecord& StepLog::at(int rank, int step) {
  if (rank < 0 || rank >= ranks_ || step < 0 || step >= steps_)
    throw std::out_of_range("step log: rank or step out of range");
  while (records_.size() <= static_cast<std::size_t>(step))
    records_.emplace_back(static_cast<std::size_t>(ranks_));
  return records_[static_cast<std::size_t>(step)][static_cast<std::size_t>(rank)];
}

const RankStepRecord& StepLog::at(int rank, int step) const {
  static const RankStepRecord none{};
  if (rank < 0 || rank >= ranks_ || step < 0 || step >= steps_)
    throw std::out_of_range("step log: rank or step out of range");
  if (static_cast<std::size_t>(step) >= records_.size()) return none;
  return records_[static_cast<std::size_t>(step)][static_cast<std::size_t>(rank)];
}

std::vector<StepSummary> summarize_steps(const StepLog& log) {
  std::vector<StepSummary> out;
  double previous_end = 0;
  for (int s = 0; s < log.steps(); ++s) {
    StepSummary row;
    row.step = s;
    row.communicated = log.communicates(s);
    // The part of [from, to] inside the step's window [previous_end, ...]; every `to` is at most
    // this step's end, the largest agg_end.
    const auto inside = [previous_end](double from, double to) {
      return std::max(0.0, to - std::max(from, previous_end));
    };
    for (int r = 0; r < log.ranks(); ++r) {
      const auto& rec = log.at(r, s);
      row.end_time_s = std::max(row.end_time_s, rec.agg_end);
      row.compute_time_s = std::max(row.compute_time_s, inside(rec.start, rec.compute_end));
      row.comm_time_s = std::max(row.comm_time_s, inside(rec.agg_start, rec.agg_end));
      row.exposed_comm_time_s =
          std::max(row.exposed_comm_time_s, inside(std::max(rec.compute_end, rec.agg_start), rec.agg_end));
      add_saturating(row.bytes_sent, rec.bytes_sent);
      add_saturating(row.messages_sent, rec.messages_sent);
    }
    row.step_time_s = row.end_time_s - previous_end;
    previous_end = row.end_time_s;
    out.push_back(row);
  }
  return out;
}

}  // namespace aggsim
