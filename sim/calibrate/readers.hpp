#pragma once
// The format readers behind read_measurement_file (internal to sim/calibrate).
#include <string>
#include <unordered_set>
#include <vector>

#include "sim/calibrate/measurement.hpp"
#include "sim/core/log_words.hpp"

namespace aggsim::readers {

// Bounds on what a row may say: the ranks aggsim simulates, and sizes below 2^63 bytes (as a
// scenario's). A row beyond them is skipped with its reason, a rank line is an input error.
constexpr double kMaxRanks = 1 << 22;
constexpr double kMaxBytes = 9223372036854775807.0;  // 2^63 - 1, rounded to 2^63 as a double

// Rows one file may hold (a log of nccl-tests' default sweep has about 30 per collective): appends
// `row`, or throws InputError at its line beyond the bound, before the rows outgrow their file.
constexpr std::size_t kMaxMeasurementRows = 100000;
void add_row(MeasurementFile& out, const Measurement& row);

// Lines of a log with launchers' per-line prefixes removed: srun -l's "0: " and mpirun's "[0] ",
// "[1,0]<stdout>:". No regular expression (std::regex recurses once per character: a long line
// overflowed the stack).
std::vector<std::string> log_lines(const std::string& text);

// Where "NCCL INFO" (or WARN, TRACE, CALL) first appears in a line, or npos.
std::size_t nccl_marker(const std::string& line);
// "host" of a line that starts with NCCL's "host:pid:tid" prefix, else "".
std::string debug_host(const std::string& line);

// Hosts that start NCCL's debug lines in a log, to find where one glued to other text begins.
// Bounded (names of at most 255 bytes, 1024 names of at most 16 lengths), so that looking a glued
// word up costs at most 16 hashes of its tail.
class KnownHosts {
 public:
  void add(const std::string& host);
  // The longest known host that `word` ends with, or 0.
  std::size_t longest_suffix(const std::string& word) const;

 private:
  std::unordered_set<std::string> names_;
  std::vector<std::size_t> lengths_;
};

// A line holding the end of a table row and then one of NCCL's debug lines (the process printed
// both to one stream, the row in pieces around NCCL's per-call lines): "   512  128  float  sum
// -1[0] host:1:2 [0] NCCL INFO ...". `text` is what precedes NCCL's prefix (a launcher tag
// written there removed), `debug` the NCCL line; a line without NCCL's marker is all `text`.
// `known_hosts` (hosts that start other debug lines of the log) tell where a host name glued to
// the text begins.
struct GluedSplit {
  std::string text;
  std::string debug;
};
GluedSplit split_glued_debug(const std::string& line, const KnownHosts& known_hosts);

void read_nccl_tests(const std::vector<std::string>& lines, const std::string& label,
                     const MeasurementDefaults& defaults, MeasurementFile& out);
void read_osu(const std::vector<std::string>& lines, const std::string& label,
              const MeasurementDefaults& defaults, MeasurementFile& out);
void read_csv(const std::vector<std::string>& lines, const std::string& label,
              const MeasurementDefaults& defaults, MeasurementFile& out);

}  // namespace aggsim::readers
