#pragma once
// The format readers behind read_measurement_file (internal to sim/calibrate).
#include <string>
#include <vector>

#include "sim/calibrate/measurement.hpp"

namespace aggsim::readers {

// Lines of a log with mpirun's per-rank prefixes ("[0] ", "[1,0]<stdout>:") removed.
std::vector<std::string> log_lines(const std::string& text);
std::vector<std::string> split_words(const std::string& line);
bool parse_number(const std::string& word, double& value);  // the whole word, finite

void read_nccl_tests(const std::vector<std::string>& lines, const std::string& label,
                     const MeasurementDefaults& defaults, MeasurementFile& out);
void read_osu(const std::vector<std::string>& lines, const std::string& label,
              const MeasurementDefaults& defaults, MeasurementFile& out);
void read_csv(const std::vector<std::string>& lines, const std::string& label, MeasurementFile& out);

}  // namespace aggsim::readers
