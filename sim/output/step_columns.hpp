#pragma once
// steps.csv's columns, each defined once: name, unit, meaning and how its cell is computed from a
// step. The writer (steps_csv) and the reference (steps_table(), `aggsim list --outputs`) both read
// this list, so a column cannot be documented under one name and written under another.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "sim/metrics/step_log.hpp"
#include "sim/output/columns.hpp"

namespace aggsim {

// What one steps.csv row is computed from: the step, and the bandwidths of its calls
// (collectives.csv), empty where they do not apply.
struct StepRow {
  const StepSummary& step;
  std::optional<double> algbw_GBps, busbw_GBps;
};

struct StepColumn {
  OutputColumn column;
  std::function<std::string(const StepRow&)> cell;  // shortest round-trip text: exact, byte-stable
};

const std::vector<StepColumn>& step_columns();

// A local step (algorithm.every > 1) aggregated and compressed nothing: only rank_spread, how far
// apart the ranks' vectors are, means something there.
bool measured_on(const StepSummary& step, double StepMath::*field);

}  // namespace aggsim
