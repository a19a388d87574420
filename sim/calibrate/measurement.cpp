#include "sim/calibrate/measurement.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>

#include "sim/calibrate/readers.hpp"
#include "sim/core/error.hpp"
#include "sim/core/input_file.hpp"

namespace aggsim {

std::string canonical_collective(const std::string& name) {
  std::string n;
  for (char c : name)
    if (c != '_' && c != '-') n += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (n.rfind("osu", 0) == 0) n = n.substr(3);
  if (n.size() > 4 && n.compare(n.size() - 4, 4, "perf") == 0) n = n.substr(0, n.size() - 4);
  if (n == "allreduce") return "all_reduce";
  if (n == "allgather") return "all_gather";
  if (n == "reducescatter") return "reduce_scatter";
  if (n == "broadcast" || n == "bcast") return "broadcast";
  if (n == "sendrecv") return "sendrecv";
  return "";
}

const std::vector<std::string>& collective_names() {
  static const std::vector<std::string> names = {"all_reduce", "all_gather", "reduce_scatter", "broadcast",
                                                 "sendrecv"};
  return names;
}

double bus_bandwidth_factor(const std::string& collective, int ranks) {
  const double n = ranks;
  if (collective == "all_reduce") return 2 * (n - 1) / n;
  if (collective == "all_gather" || collective == "reduce_scatter") return (n - 1) / n;
  return 1;
}

MeasurementFile parse_measurements(const std::string& text, const std::string& label,
                                   const MeasurementDefaults& defaults) {
  check_line_lengths(text, label);
  const auto lines = readers::log_lines(text);
  MeasurementFile out;
  // The format shows in the first words: OSU's banner, the CSV header, else nccl-tests.
  std::string first;
  for (const auto& l : lines)
    if (l.find_first_not_of(" \t") != std::string::npos) {
      first = l;
      break;
    }
  if (text.find("# OSU ") != std::string::npos)
    readers::read_osu(lines, label, defaults, out);
  else if (first.rfind("collective,", 0) == 0)
    readers::read_csv(lines, label, defaults, out);
  else
    readers::read_nccl_tests(lines, label, defaults, out);
  if (out.rows.empty()) {
    const std::string expected =
        "no measurement found (expected nccl-tests, OSU or collective,ranks,nodes,bytes,time CSV output)";
    if (out.skipped.empty()) throw InputError(fmt::format("{}:1: {}", label, expected));
    // At the first row that looked like data.
    throw InputError(fmt::format("{}: {}; this row cannot be read: {}", out.skipped.front().where, expected,
                                 out.skipped.front().why));
  }
  return out;
}

MeasurementFile read_measurement_file(const std::string& file, const MeasurementDefaults& defaults) {
  // The checks every input file gets (a regular file of at most 64 MiB, lines of at most 1 MiB);
  // logs need not be UTF-8.
  return parse_measurements(read_input_file(file, "measurement", false), file, defaults);
}

}  // namespace aggsim
