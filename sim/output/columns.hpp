#pragma once
// Every column aggsim writes into steps.csv, collectives.csv, summary.json and a sweep's results.csv,
// defined once: name, unit and meaning. The writers take their names from these tables (in this
// order, refusing any name not in them) and `aggsim list --outputs` prints them, so the reference
// (sim/output/COLUMNS.md, checked by a test) cannot drift from the files.
#include <string>
#include <vector>

namespace aggsim {

struct OutputColumn {
  std::string name;
  std::string unit;       // "s", "bytes", "GB/s" (10^9 bytes per second), "" for counts and text
  std::string meaning;    // Markdown
  bool optional = false;  // summary.json: present only when it applies (a workload, a target loss)
};

// nccl-tests' two bandwidths, as steps.csv, collectives.csv and summary.json define them.
inline constexpr const char* kAlgbwMeaning =
    "dense bytes over the call's time (what the user gets): the call's `dense_bytes` / `time_s`, in "
    "10^9 bytes per second";
inline constexpr const char* kBusbwMeaning =
    "wire bytes x the collective's bus factor over the call's time (what the links carry): nccl-tests' "
    "factor of the call's `collective`, `wire_bytes` x 2(p-1)/p for `all_reduce`, x (p-1)/p for "
    "`all_gather` and `reduce_scatter` (x (p-1) for `allgather`, whose calls count one rank's payload), x 1 "
    "for `broadcast`, p the size of `rank_group`; with compression it counts the compressed bytes";

struct OutputTable {
  std::string file;  // "steps.csv"
  std::string what;  // one paragraph (Markdown)
  std::vector<OutputColumn> columns;
};

const OutputTable& steps_table();  // from step_columns() (sim/output/step_columns.hpp)
const OutputTable& collectives_table();
const OutputTable& summary_table();
const OutputTable& results_table();

// The four tables as a Markdown reference (sim/output/COLUMNS.md) or as plain text for a terminal.
std::string output_reference_markdown();
std::string output_reference_text();

// A CSV written in a table's column order: each row gives every column's cell, by name, in order.
class CsvTableWriter {
 public:
  explicit CsvTableWriter(const OutputTable& table);
  // Starts a row; cells follow with cell(), in the table's order. A cell "inf" or "nan" (a number
  // out of the finite range) throws SimulationError naming the file, column and row.
  CsvTableWriter& cell(const std::string& name, const std::string& text);
  // Ends the row (throws std::logic_error if a column was skipped).
  void end_row();
  const std::string& text() const { return text_; }

 private:
  const OutputTable& table_;
  std::vector<std::string> row_;
  std::string text_;
  int rows_ = 0;  // ended so far
};

}  // namespace aggsim
