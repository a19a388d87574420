#include "sim/calibrate/measurement.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>

#include "sim/calibrate/readers.hpp"
#include "sim/core/error.hpp"
#include "sim/core/input_file.hpp"
#include "sim/core/strings.hpp"

namespace aggsim {

const std::vector<std::string>& collective_names() {
  static const std::vector<std::string> names = {"all_reduce", "all_gather", "reduce_scatter", "broadcast",
                                                 "sendrecv"};
  return names;
}

double bus_bandwidth_factor(const std::string& collective, int ranks) {
  // sendrecv (nccl-tests' factor 1) is no collective of the simulation's.
  const std::optional<CollectiveKind> kind = collective_kind_named(collective);
  return kind ? nccl_tests_bus_factor(*kind, ranks).value_or(1.0) : 1.0;
}

std::string collective_option(const std::string& given) {
  const auto& names = collective_names();
  if (std::find(names.begin(), names.end(), given) != names.end()) return given;
  std::string list;
  for (const auto& n : names) list += (list.empty() ? "" : " | ") + n;
  if (given.empty()) throw InputError(fmt::format("--collective: an empty name is not a collective; use {}", list));
  const std::string canonical = canonical_collective(given);
  throw InputError(fmt::format("--collective: '{}' is not a collective{}; use {}", given,
                               canonical.empty() ? did_you_mean(given, names)
                                                 : fmt::format(" (did you mean '{}'?)", canonical),
                               list));
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
