#include "sim/metrics/step_log.hpp"

#include <algorithm>
#include <stdexcept>

#include "sim/core/checked.hpp"

namespace aggsim {

double hidden_part(double from, double to, double start, double compute_end,
                   std::optional<double> window_start) {
  if (!window_start) return 0;
  return std::max(0.0, std::min(to, compute_end) - std::max({from, start, *window_start}));
}

void StepLog::reach(int step) {
  while (records_.size() <= static_cast<std::size_t>(step)) {
    records_.emplace_back(static_cast<std::size_t>(ranks_));
    ends_.emplace_back();
  }
}

RankStepRecord& StepLog::at(int rank, int step) {
  if (rank < 0 || rank >= ranks_ || step < 0 || step >= steps_)
    throw std::out_of_range("step log: rank or step out of range");
  reach(step);
  return records_[static_cast<std::size_t>(step)][static_cast<std::size_t>(rank)];
}

void StepLog::aggregation_ended(int step, double at) {
  if (step < 0 || step >= steps_) throw std::out_of_range("step log: step out of range");
  reach(step);
  StepEnd& end = ends_[static_cast<std::size_t>(step)];
  end.latest = end.ranks == 0 ? at : std::max(end.latest, at);
  ++end.ranks;
}

std::optional<double> StepLog::window_start(int step) const {
  if (step <= 0) return 0.0;
  if (static_cast<std::size_t>(step - 1) >= ends_.size()) return std::nullopt;
  const StepEnd& end = ends_[static_cast<std::size_t>(step - 1)];
  if (end.ranks < ranks_) return std::nullopt;
  return end.latest;
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
      const double exposed = inside(std::max(rec.compute_end, rec.agg_start), rec.agg_end);
      if (r == 0 || exposed > row.exposed_comm_time_s) {  // the critical rank: its hidden share
        row.exposed_comm_time_s = exposed;
        row.hidden_comm_time_s = rec.hidden_comm;
        if (log.reports_gathers()) row.exposed_gather_time_s = rec.exposed_gather;
      }
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
