#pragma once
// The format readers behind read_measurement_file (internal to sim/calibrate).
#include <string>
#include <vector>

#include "sim/calibrate/measurement.hpp"

namespace aggsim::readers {

// Bounds on what a row may say: the ranks aggsim simulates, and sizes below 2^63 bytes (as a
// scenario's). A row beyond them is skipped with its reason, a rank line is an input error.
constexpr double kMaxRanks = 1 << 22;
constexpr double kMaxBytes = 9223372036854775807.0;  // 2^63 - 1, rounded to 2^63 as a double

// Lines of a log with mpirun's per-rank prefixes ("[0] ", "[1,0]<stdout>:") removed; no regular
// expression (std::regex recurses once per character: a long line overflowed the stack).
std::vector<std::string> log_lines(const std::string& text);
std::vector<std::string> split_words(const std::string& line);
bool parse_number(const std::string& word, double& value);  // the whole word, finite

void read_nccl_tests(const std::vector<std::string>& lines, const std::string& label,
                     const MeasurementDefaults& defaults, MeasurementFile& out);
void read_osu(const std::vector<std::string>& lines, const std::string& label,
              const MeasurementDefaults& defaults, MeasurementFile& out);
void read_csv(const std::vector<std::string>& lines, const std::string& label, MeasurementFile& out);

}  // namespace aggsim::readers
