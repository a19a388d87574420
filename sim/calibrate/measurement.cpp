#include "sim/calibrate/measurement.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <regex>
#include <sstream>

#include "sim/calibrate/readers.hpp"
#include "sim/core/error.hpp"

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

double bus_bandwidth_factor(const std::string& collective, int ranks) {
  const double n = ranks;
  if (collective == "all_reduce") return 2 * (n - 1) / n;
  if (collective == "all_gather" || collective == "reduce_scatter") return (n - 1) / n;
  return 1;
}

namespace readers {

std::vector<std::string> log_lines(const std::string& text) {
  // Open MPI's --tag-output "[1,0]<stdout>:" and the "[0] " of other launchers.
  static const std::regex prefix(R"(^\[[0-9,]+\](<std(out|err)>:)?\s?)");
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(std::regex_replace(line, prefix, "", std::regex_constants::format_first_only));
  }
  return lines;
}

std::vector<std::string> split_words(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

bool parse_number(const std::string& word, double& value) {
  if (word.empty()) return false;
  char* end = nullptr;
  value = std::strtod(word.c_str(), &end);
  return end == word.c_str() + word.size() && std::isfinite(value);
}

}  // namespace readers

MeasurementFile parse_measurements(const std::string& text, const std::string& label,
                                   const MeasurementDefaults& defaults) {
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
    readers::read_csv(lines, label, out);
  else
    readers::read_nccl_tests(lines, label, defaults, out);
  if (out.rows.empty()) {
    std::string why =
        "no measurement found (expected nccl-tests, OSU or collective,ranks,nodes,bytes,time CSV output)";
    if (!out.skipped.empty())
      why +=
          fmt::format("; first unreadable row at {}: {}", out.skipped.front().where, out.skipped.front().why);
    throw InputError(fmt::format("{}: {}", label, why));
  }
  return out;
}

MeasurementFile read_measurement_file(const std::string& file, const MeasurementDefaults& defaults) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw InputError(fmt::format("{}: cannot read the measurement file", file));
  std::stringstream buffer;
  buffer << in.rdbuf();
  return parse_measurements(buffer.str(), file, defaults);
}

}  // namespace aggsim
