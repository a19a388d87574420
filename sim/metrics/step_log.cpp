#include "sim/metrics/step_log.hpp"

#include <algorithm>

namespace aggsim {

std::vector<StepSummary> summarize_steps(const StepLog& log) {
  std::vector<StepSummary> out;
  double previous_end = 0;
  for (int s = 0; s < log.steps(); ++s) {
    StepSummary row;
    row.step = s;
    for (int r = 0; r < log.ranks(); ++r) {
      const auto& rec = log.at(r, s);
      row.end_time_s = std::max(row.end_time_s, rec.agg_end);
      row.compute_time_s = std::max(row.compute_time_s, rec.compute_end - rec.start);
      row.comm_time_s = std::max(row.comm_time_s, rec.agg_end - rec.agg_start);
      row.exposed_comm_time_s =
          std::max(row.exposed_comm_time_s, rec.agg_end - std::max(rec.compute_end, rec.agg_start));
      row.bytes_sent += rec.bytes_sent;
      row.messages_sent += rec.messages_sent;
    }
    row.step_time_s = row.end_time_s - previous_end;
    previous_end = row.end_time_s;
    out.push_back(row);
  }
  return out;
}

}  // namespace aggsim
