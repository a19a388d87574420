// Plain CSV: a header naming collective, ranks, nodes, bytes and time (seconds; `time_s` also
// accepted), in any order, then one row per measurement. `#` starts a comment line.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "sim/calibrate/readers.hpp"
#include "sim/core/error.hpp"
#include "sim/core/strings.hpp"

namespace aggsim::readers {

namespace {

std::vector<std::string> split_csv(const std::string& line) {
  if (line.empty()) return {};
  return split_list(line);
}

}  // namespace

void read_csv(const std::vector<std::string>& lines, const std::string& label,
              const MeasurementDefaults& defaults, MeasurementFile& out) {
  std::map<std::string, std::size_t> column;
  std::size_t width = 0;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const std::string& line = lines[i];
    const std::string where = fmt::format("{}:{}", label, i + 1);
    if (line.find_first_not_of(" \t") == std::string::npos || line[line.find_first_not_of(" \t")] == '#')
      continue;
    const auto cells = split_csv(line);
    if (column.empty()) {
      for (std::size_t c = 0; c < cells.size(); ++c) column[cells[c] == "time_s" ? "time" : cells[c]] = c;
      for (const char* need : {"collective", "ranks", "nodes", "bytes", "time"})
        if (!column.count(need))
          throw InputError(fmt::format(
              "{}: CSV header lacks column '{}' (needs collective,ranks,nodes,bytes,time)", where, need));
      width = cells.size();
      continue;
    }
    if (cells.size() != width) {
      out.skipped.push_back({where, fmt::format("expected {} cells, found {}", width, cells.size())});
      continue;
    }
    double ranks = 0, nodes = 0, bytes = 0, time = 0;
    const std::string collective = canonical_collective(cells[column["collective"]]);
    if (collective.empty()) {
      out.skipped.push_back({where, fmt::format("unknown collective '{}'", cells[column["collective"]])});
      continue;
    }
    if (!parse_number(cells[column["ranks"]], ranks) || !parse_number(cells[column["nodes"]], nodes) ||
        !parse_number(cells[column["bytes"]], bytes) || !parse_number(cells[column["time"]], time) ||
        ranks < 1 || nodes < 1 || nodes > ranks || bytes < 0 || time <= 0 || ranks != std::floor(ranks) ||
        nodes != std::floor(nodes) || bytes != std::floor(bytes) || ranks > kMaxRanks || bytes >= kMaxBytes) {
      out.skipped.push_back(
          {where,
           "ranks, nodes, bytes must be whole numbers (1 <= nodes <= ranks <= 4194304, bytes "
           "below 2^63), time > 0 seconds"});
      continue;
    }
    if (!defaults.shape_option.empty() && (ranks != defaults.ranks || nodes != defaults.nodes))
      throw InputError(fmt::format("{}: this row is {} ranks on {} node{}, but {} says {} on {}", where,
                                   ranks, nodes, nodes == 1 ? "" : "s", defaults.shape_option, defaults.ranks,
                                   defaults.nodes));
    Measurement row;
    row.collective = collective;
    row.ranks = static_cast<int>(ranks);
    row.nodes = static_cast<int>(nodes);
    row.bytes = static_cast<std::uint64_t>(bytes);
    row.time_s = time;
    row.source = where;
    add_row(out, row);
  }
}

}  // namespace aggsim::readers
