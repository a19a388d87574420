#include "sim/output/step_columns.hpp"

#include <fmt/format.h>

namespace aggsim {

namespace {

std::string number(double v) {
  return fmt::format("{}", v);
}

std::string optional_number(const std::optional<double>& v) {
  return v ? number(*v) : std::string();
}

// A math-plane figure: empty with math off, and on local steps for all but rank_spread.
std::function<std::string(const StepRow&)> math_cell(double StepMath::*field) {
  return [field](const StepRow& r) {
    return r.step.math && measured_on(r.step, field) ? number((*r.step.math).*field) : std::string();
  };
}

}  // namespace

bool measured_on(const StepSummary& step, double StepMath::*field) {
  return step.communicated || field == &StepMath::rank_spread;
}

const std::vector<StepColumn>& step_columns() {
  static const std::vector<StepColumn> columns = {
      {{"step", "", "the step's index, from 0"},
       [](const StepRow& r) { return fmt::format("{}", r.step.step); }},
      {{"step_time_s", "s",
        "the step's window: from the end of the previous step (its last rank) to the end of this one"},
       [](const StepRow& r) { return number(r.step.step_time_s); }},
      {{"comm_time_s", "s",
        "the slowest rank's time inside the aggregation, from entering its first call to leaving its "
        "last (with DDP buckets the waits for the backward pass between them included)"},
       [](const StepRow& r) { return number(r.step.comm_time_s); }},
      {{"compute_time_s", "s", "the slowest rank's gradient computation (forward and backward pass)"},
       [](const StepRow& r) { return number(r.step.compute_time_s); }},
      {{"end_time_s", "s", "when the last rank finished the step (simulated clock)"},
       [](const StepRow& r) { return number(r.step.end_time_s); }},
      {{"bytes_sent", "bytes", "wire bytes all ranks sent in the step"},
       [](const StepRow& r) { return fmt::format("{}", r.step.bytes_sent); }},
      {{"messages", "", "messages all ranks sent in the step"},
       [](const StepRow& r) { return fmt::format("{}", r.step.messages_sent); }},
      {{"loss", "",
        "held-out loss of the averaged model, on the steps a training workload evaluates (empty "
        "otherwise)"},
       [](const StepRow& r) { return optional_number(r.step.loss); }},
      {{"accuracy", "", "held-out accuracy, for classification workloads (empty otherwise)"},
       [](const StepRow& r) { return optional_number(r.step.accuracy); }},
      {{"consensus_distance", "",
        "how far the ranks' models are apart on evaluated steps, for decentralized schemes and with "
        "`algorithm.every` > 1 (empty otherwise)"},
       [](const StepRow& r) { return optional_number(r.step.consensus_distance); }},
      {{"exposed_comm_time_s", "s",
        "the slowest rank's aggregation time not hidden behind its compute: from the later of compute end "
        "and aggregation start to aggregation end (with DDP buckets, what remains after the backward "
        "pass)"},
       [](const StepRow& r) { return number(r.step.exposed_comm_time_s); }},
      {{"algbw_GBps", "GB/s",
        std::string("the step's calls (collectives.csv): their dense bytes summed over their times "
                    "summed, i.e. ") +
            kAlgbwMeaning + "; empty for decentralized schemes and on local steps"},
       [](const StepRow& r) { return optional_number(r.algbw_GBps); }},
      {{"busbw_GBps", "GB/s",
        std::string("the step's calls: ") + kBusbwMeaning +
            "; empty for parameter servers, decentralized schemes and local steps"},
       [](const StepRow& r) { return optional_number(r.busbw_GBps); }},
      {{"agg_error", "",
        "||x - e|| / ||e||: e the exact reduction of the ranks' inputs with the scenario's `op` (in "
        "double precision), x the mean of the ranks' results; empty with `math: off` and on local "
        "steps"},
       math_cell(&StepMath::agg_error)},
      {{"agg_signed_error", "",
        "<x - e, e> / ||e||^2, the part of that error along e: tends to 0 over seeds for an unbiased "
        "scheme, stays negative for one that shrinks (top-k)"},
       math_cell(&StepMath::agg_signed_error)},
      {{"compress_error", "",
        "mean over the ranks that compressed of ||decode(encode(v)) - v|| / ||v||, v the rank's own "
        "vector (compensated under error feedback; for PowerSGD its matrix against the projection P Q^T); "
        "0 without compression. On a synthetic gradient (`gradient: synthetic` in summary.json) v is "
        "random: see sim/output/README.md for what to expect there"},
       math_cell(&StepMath::compress_error)},
      {{"rank_spread", "",
        "max over ranks of ||x_r - x|| / ||x||: 0 for an all-reduce, the consensus distance for gossip"},
       math_cell(&StepMath::rank_spread)},
      {{"communicated", "", "1 on a step that aggregated, 0 on a local step of `algorithm.every`"},
       [](const StepRow& r) { return std::string(r.step.communicated ? "1" : "0"); }},
      // Last: readers that take columns by position keep theirs.
      {{"hidden_comm_time_s", "s",
        "the aggregation calls' own time that ran while the rank computed (DDP buckets during the backward "
        "pass), on the rank `exposed_comm_time_s` is measured on: the sum over its calls of |[call entered, "
        "call left] ∩ [compute start, compute end]|, within the window. Never more than the calls took; "
        "`exposed_comm_time_s` + `hidden_comm_time_s` is that rank's time in calls"},
       [](const StepRow& r) { return number(r.step.hidden_comm_time_s); }},
      {{"exposed_gather_time_s", "s",
        "sharded data parallelism (`fsdp`): the time of the parameter gathers of the forward and backward "
        "passes not hidden behind compute, on the rank `exposed_comm_time_s` is measured on; these gathers "
        "run before and between the units' compute, so this time lies inside `compute_time_s` (the "
        "breakdown draws it apart from it); gathers after the step (`sharding: optimizer`, the last step) "
        "are in `exposed_comm_time_s`; empty for other algorithms"},
       [](const StepRow& r) { return r.step.exposed_gather_time_s ? number(*r.step.exposed_gather_time_s) : std::string(); }},
  };
  return columns;
}

const OutputTable& steps_table() {
  static const OutputTable table = [] {
    OutputTable t{
        "steps.csv",
        "One row per step. Ranks are not in lockstep: a rank that ends a step early starts the next one "
        "inside the previous window, and that part belongs to the previous row; the per-rank times count "
        "only what lies inside the row's window, so `compute_time_s`, `comm_time_s` <= `step_time_s` and "
        "`exposed_comm_time_s` <= `comm_time_s` on every row.",
        {}};
    for (const auto& c : step_columns()) t.columns.push_back(c.column);
    return t;
  }();
  return table;
}

}  // namespace aggsim
