#include "sim/output/columns.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "sim/core/error.hpp"
#include "sim/core/strings.hpp"

namespace aggsim {

const OutputTable& collectives_table() {
  static const OutputTable table{
      "collectives.csv",
      "One row per aggregation call: each step that aggregates makes one call per bucket (one with "
      "`granularity: model`), in the order the ranks make them. A call's time runs from its first "
      "transfer, latency or reduction (any rank's) to its last, and not from before the call before it "
      "ended: it never includes compute before the call or the wait for the backward pass; reductions, "
      "latencies (an NCCL call's base latency and last hop) and compression work between transfers are "
      "inside it. A replayed step's rows are the recorded step's, shifted to its start. Empty cells: the "
      "column does not apply.",
      {
          {"step", "", "the step that made the call"},
          {"bucket", "",
           "the call's index within the step: 0 with `granularity: model`; DDP buckets in backward order; "
           "one per tensor in parameter order with `overlap: false`"},
          {"rank_group", "",
           "the ranks whose gradients the call reduces, as ranges (`0-15`): every rank for all-reduces, "
           "all-gather and hierarchical schemes (their intra- and inter-node phases are inside the one "
           "call) and for decentralized schemes (each rank averages with its neighbours only); the "
           "workers for a parameter server with `placement: dedicated` (`2-15` with servers 0 and 1); under a "
           "`parallel` layout, the first data-parallel group that runs the call (its pipeline stage's tensor rank "
           "0: `0,8,16,24` with tensor 8), whose peers run the same call at once"},
          {"collective", "",
           "what the call runs: `all_reduce`, `all_gather`, `reduce_scatter`, `broadcast` (nccl-tests' "
           "collectives, whose bus factors `busbw_GBps` uses), `parameter_server` (push to servers and pull "
           "back) or `neighbor_exchange` (decentralized schemes)"},
          {"algorithm", "",
           "what ran: the scenario's `algorithm.name`, except for `nccl_allreduce` with another "
           "`collective`, whose calls are `nccl_allgather`, `nccl_reducescatter` or `nccl_broadcast`, "
           "NCCL's calls of those names"},
          {"nccl_algorithm", "", "the algorithm an NCCL-style tuner chose for the call (empty: none chose)"},
          {"protocol", "", "the protocol it chose (LL, LL128, Simple; empty: none chose)"},
          {"channels", "", "the channels it chose (empty: none chose)"},
          {"dense_bytes", "bytes", "the call's gradient in fp32 (its bucket's elements x 4)"},
          {"wire_bytes", "bytes",
           "one rank's contribution as the compressor encodes it (its formula on the bucket's modeled "
           "tensors; the upper bound for `threshold`, the expected size for `atomo`); `dense_bytes` "
           "without compression"},
          {"start_s", "s",
           "when the call began (simulated clock): its first transfer or the first latency or reduction a "
           "rank spent on it (an NCCL call's base latency), not before the call before it ended"},
          {"end_s", "s",
           "when it ended: its last transfer, or the last latency or reduction a rank spent on it (a "
           "pipeline's drain and last hop), whichever came later"},
          {"time_s", "s",
           "`end_s` - `start_s`: what the call costs; a step of one call and no compute lasts as long (empty "
           "when the call transferred nothing, e.g. one rank; a compressor's encoding before its first "
           "transfer and decoding after its last lie outside)"},
          {"algbw_GBps", "GB/s", std::string(kAlgbwMeaning) + "; empty for decentralized schemes"},
          {"busbw_GBps", "GB/s",
           std::string(kBusbwMeaning) + "; empty for parameter servers and decentralized schemes"},
          // Last: readers that take columns by position keep theirs.
          {"unit", "",
           "sharded data parallelism (`fsdp`): the layers of the unit the call gathers or reduces, as "
           "layer-table indices `first-last`; empty otherwise"},
      }};
  return table;
}

const OutputTable& summary_table() {
  static const OutputTable table{
      "summary.json",
      "One JSON object per run; a sweep's results.csv has one column per field. Means over steps are over "
      "the rows of steps.csv where the column is not empty (`null` when none is). After the fields "
      "below come the algorithm's own figures (`neighbor_averaging`: `spectral_gap`, "
      "`mixing_period_rounds`; `parameter_server`: `max_staleness`, `deferred_pulls`, "
      "`discarded_pushes`; `hierarchical_allreduce`: `node_flows_merged`).",
      {
          {"format_version", "",
           "the layout of summary.json and of a sweep's results.csv, 1; it grows when a field changes "
           "meaning or goes away (CHANGELOG.md says how to read the older one)"},
          {"aggsim_version", "", "the aggsim that wrote the run"},
          {"simgrid_version", "", "the SimGrid it ran on"},
          {"scenario", "", "the scenario's `name`"},
          {"seed", "", "the scenario's `seed`"},
          {"ranks", "", "simulated ranks"},
          {"steps", "", "simulated steps"},
          {"algorithm", "", "`algorithm.name`"},
          {"collective", "", "what its calls run (collectives.csv's `collective`)"},
          {"op", "", "`algorithm.op`"},
          {"compression", "", "`compression.name`"},
          {"network", "", "the network preset"},
          {"calibration", "", "the calibration file, or null"},
          {"platform", "", "the platform and its host count (`platforms/cluster_16.xml (16 hosts)`)"},
          {"model_bytes", "bytes", "the modeled dense fp32 gradient (`model.size` or the layer table's)"},
          {"math", "", "whether the math plane ran (`model.math`)"},
          {"gradient", "",
           "what the math plane aggregated: `workload` (a training workload's gradients or weights), "
           "`synthetic` (standard normal numbers, a new draw per rank and step: no low-rank or sparse "
           "structure, so `agg_error` and `compress_error` show a compressor's worst case), or null with "
           "`math: off`"},
          {"sim_time_s", "s", "simulated end time"},
          {"mean_step_time_s", "s", "mean of `step_time_s`"},
          {"exposed_comm_time_s", "s", "mean of `exposed_comm_time_s`"},
          {"hidden_comm_time_s", "s", "mean of `hidden_comm_time_s`"},
          {"exposed_gather_time_s", "s", "mean of `exposed_gather_time_s` (sharded data parallelism only)", true},
          {"collective_calls", "", "aggregation calls (rows of collectives.csv)"},
          {"collective_time_s", "s", "mean `time_s` of the calls that transferred anything (null if none)"},
          {"collective_dense_bytes", "bytes", "mean `dense_bytes` of those calls"},
          {"collective_wire_bytes", "bytes", "mean `wire_bytes` of those calls"},
          {"algbw_GBps", "GB/s",
           "`collective_dense_bytes` / `collective_time_s` (the calls' dense bytes over their time, "
           "summed over the run); null for decentralized schemes"},
          {"busbw_GBps", "GB/s",
           "`collective_wire_bytes` x the bus factor / `collective_time_s` (collectives.csv's busbw over the "
           "run); null for parameter servers and decentralized schemes"},
          {"agg_error", "", "mean of `agg_error`"},
          {"agg_signed_error", "", "mean of `agg_signed_error`"},
          {"compress_error", "", "mean of `compress_error`"},
          {"rank_spread", "", "mean of `rank_spread`"},
          {"bytes_sent", "bytes", "wire bytes sent by all ranks over the run"},
          {"messages", "", "messages sent by all ranks over the run"},
          {"steps_communicated", "", "steps that aggregated (`steps` / `every`, rounded down)"},
          {"steps_replayed", "", "steps whose timing was reused from an equal earlier step"},
          {"replay_refused", "", "why no step of the run could be replayed, or null"},
          {"calibration_sizes", "",
           "with a calibration: one entry per call size the run used, in increasing size: `wire_bytes` "
           "(one rank's contribution, the collective's buffer without compression), `calls`, `choice` "
           "(the NCCL algorithm/protocol most of those calls ran, or null), `in_measured_range` (1 when "
           "the size lies between the smallest and the largest size the calibration was fitted on, 0 "
           "outside, null when the calibration does not say) and `choice_observed` (1 when that choice "
           "ran in the calibration's measurements, 0 when not, null when unknown): what `aggsim compare` "
           "and `perf` print per size",
           true},
          {"calibration_in_measured_range", "",
           "with a calibration: 1 when every call's size lies inside the measured range, 0 when one does "
           "not (a prediction outside what was measured), null when the calibration does not say",
           true},
          {"calibration_choice_observed", "",
           "with a calibration: 1 when every call's NCCL choice ran in the calibration's measurements, 0 "
           "when one did not, null when unknown",
           true},
          {"problem", "", "the training workload's problem (workload runs)", true},
          {"final_loss", "", "the last evaluation's held-out loss (workload runs)", true},
          {"target_loss", "", "`workload.target_loss` (when given)", true},
          {"time_to_target_s", "s",
           "simulated time at which the held-out loss first reached `target_loss`, or null", true},
      }};
  return table;
}

const OutputTable& results_table() {
  static const OutputTable table{
      "results.csv",
      "A sweep's table, one row per point in expansion order (`aggsim sweep run` / `merge`). Swept values "
      "are written as in the sweep file, summary values as in summary.json.",
      {
          {"id", "", "the point's id (a hash of its resolved scenario)"},
          {"status", "", "`done`, `failed` or `pending`"},
          {"<swept key>", "", "one column per swept key path (`ranks`, `platform.bandwidth`), as written"},
          {"<swept key>_Bps", "bytes/s",
           "beside a key swept over quantities with units, the same values in SI base units: `_Bps` "
           "(bandwidths), `_bytes` (sizes), `_s` (durations), `_flops` (speeds)"},
          {"repeat", "", "the repetition's index, with `repeat:` > 1"},
          {"<summary.json field>", "",
           "every field of the points' summary.json, in its order (a field named like a swept key is left "
           "out)"},
          {"error", "", "why a point failed (its stderr), or empty"},
      }};
  return table;
}

namespace {

std::vector<const OutputTable*> tables() {
  return {&steps_table(), &collectives_table(), &summary_table(), &results_table()};
}

}  // namespace

std::string output_reference_markdown() {
  std::string out =
      "# Output columns\n\n"
      "Generated by `aggsim list --outputs --markdown` from the definitions the writers use "
      "(`sim/output/columns.cpp`, steps.csv's in `sim/output/step_columns.cpp` with how each cell is "
      "computed); a test fails when this file differs from what aggsim prints. What "
      "the files are for, and how the bandwidths are meant: [README.md](README.md).\n";
  for (const OutputTable* t : tables()) {
    out += fmt::format("\n## `{}`\n\n{}\n\n| column | unit | meaning |\n| --- | --- | --- |\n", t->file,
                       t->what);
    for (const auto& c : t->columns)
      out += fmt::format("| `{}` | {} | {}{} |\n", c.name, c.unit, markdown_cell(c.meaning),
                         c.optional ? " (only when it applies)" : "");
  }
  return out;
}

std::string output_reference_text() {
  std::string out;
  for (const OutputTable* t : tables()) {
    out += fmt::format("{}{}:\n", out.empty() ? "" : "\n", t->file);
    for (const auto& c : t->columns)
      out += fmt::format("  {:<24} {:<6} {}{}\n", c.name, c.unit, c.meaning,
                         c.optional ? " (only when it applies)" : "");
  }
  return out;
}

CsvTableWriter::CsvTableWriter(const OutputTable& table) : table_(table) {
  std::vector<std::string> names;
  for (const auto& c : table.columns) names.push_back(c.name);
  text_ = csv_row(names);
}

CsvTableWriter& CsvTableWriter::cell(const std::string& name, const std::string& text) {
  const std::size_t at = row_.size();
  if (at >= table_.columns.size() || table_.columns[at].name != name)
    throw std::logic_error(fmt::format("{}: cell '{}' written where column {} ('{}') belongs", table_.file,
                                       name, at,
                                       at < table_.columns.size() ? table_.columns[at].name : "none"));
  // No infinite or undefined number reaches a file: the input that makes one is refused where it is
  // read (e.g. custom_avg's denominator); anything else stops the run here, before its outputs exist.
  if (text == "inf" || text == "-inf" || text == "nan" || text == "-nan")
    throw SimulationError(fmt::format(
        "{}: column {} of row {} would hold {}: a value of the run left the finite numbers (a diverging "
        "training, an extreme rate or factor); nothing was written",
        table_.file, name, rows_ + 1, text));
  row_.push_back(text);
  return *this;
}

void CsvTableWriter::end_row() {
  if (row_.size() != table_.columns.size())
    throw std::logic_error(
        fmt::format("{}: a row with {} of {} cells", table_.file, row_.size(), table_.columns.size()));
  text_ += csv_row(row_);
  ++rows_;
  row_.clear();
}

}  // namespace aggsim
