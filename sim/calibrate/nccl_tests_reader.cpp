// nccl-tests output (all_reduce_perf, all_gather_perf, reduce_scatter_perf, broadcast_perf,
// sendrecv_perf). Versions differ in their columns (with or without `redop`, `root`, `error` or
// `#wrong`), so rows are read by the names in the last column header seen. The "Rank N ... on HOST
// device D" lines give the ranks and hosts of the table that follows; both `mpirun -np N` and
// `-g N` runs print one such line per rank.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <optional>
#include <set>

#include "sim/calibrate/readers.hpp"
#include "sim/core/checked.hpp"
#include "sim/core/error.hpp"

namespace aggsim::readers {

namespace {

// The collective: from "Collective test starting: X_perf", else from the file's name.
std::string collective_of(const std::vector<std::string>& lines, const std::string& label) {
  const std::string starting = "Collective test starting:";
  for (const auto& l : lines) {
    const auto at = l.find(starting);
    if (at == std::string::npos) continue;
    const auto words = split_words(l.substr(at + starting.size()));
    return words.empty() ? "" : canonical_collective(words[0]);
  }
  const std::string stem = std::filesystem::path(label).stem().string();
  for (const char* name : {"all_reduce", "allreduce", "all_gather", "allgather", "reduce_scatter",
                           "reducescatter", "broadcast", "sendrecv"})
    if (stem.find(name) != std::string::npos) return canonical_collective(name);
  return "";
}

struct Header {
  std::vector<std::string> columns;
  std::size_t size = 0, time = 0, algbw = 0;
};

bool read_header(const std::vector<std::string>& words, Header& h) {
  std::vector<std::string> cols(words.begin() + (words.size() > 0 && words[0] == "#" ? 1 : 0), words.end());
  const auto at = [&](const std::string& name) { return std::find(cols.begin(), cols.end(), name); };
  if (cols.empty() || cols[0] != "size" || at("time") == cols.end() || at("algbw") == cols.end())
    return false;
  h.columns = cols;
  h.size = 0;
  h.time = static_cast<std::size_t>(at("time") - cols.begin());
  h.algbw = static_cast<std::size_t>(at("algbw") - cols.begin());
  return true;
}

bool all_digits(const std::string& word) {
  return !word.empty() && word.find_first_not_of("0123456789") == std::string::npos;
}

struct RankLine {
  std::string rank;  // digits, as printed
  std::string host;
};

// "Rank N [Group G] Pid P on HOST device D ...", anywhere in the line's words.
std::optional<RankLine> rank_line(const std::vector<std::string>& words) {
  for (std::size_t k = 0; k < words.size(); ++k) {
    if (words[k] != "Rank" || k + 1 >= words.size() || !all_digits(words[k + 1])) continue;
    std::size_t i = k + 2;
    if (i + 1 < words.size() && words[i] == "Group" && all_digits(words[i + 1])) i += 2;
    if (i + 4 < words.size() && words[i] == "Pid" && all_digits(words[i + 1]) && words[i + 2] == "on" &&
        words[i + 4].rfind("device", 0) == 0)
      return RankLine{words[k + 1], words[i + 3]};
  }
  return std::nullopt;
}

}  // namespace

void read_nccl_tests(const std::vector<std::string>& lines, const std::string& label,
                     const MeasurementDefaults& defaults, MeasurementFile& out) {
  const std::string collective = collective_of(lines, label);
  std::set<int> ranks;
  std::set<std::string> hosts;
  bool in_devices = false;
  Header header;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const std::string& line = lines[i];
    const std::string where = fmt::format("{}:{}", label, i + 1);
    if (line.find("Using devices") != std::string::npos) {
      ranks.clear();  // a new run's table follows
      hosts.clear();
      in_devices = true;
      continue;
    }
    const auto words = split_words(line);
    if (words.empty()) continue;
    if (const auto r = rank_line(words)) {
      const auto rank = parse_integer_text<long>(r->rank);
      if (!rank || *rank >= kMaxRanks)
        throw InputError(
            fmt::format("{}: the rank number of this 'Rank N ... on HOST' line is beyond {}, the "
                        "most ranks aggsim simulates",
                        where, static_cast<long>(kMaxRanks)));
      if (!in_devices) ranks.clear(), hosts.clear(), in_devices = true;
      ranks.insert(static_cast<int>(*rank));
      hosts.insert(r->host);
      continue;
    }
    if (read_header(words, header)) {
      in_devices = false;
      continue;
    }
    double size = 0;
    if (words[0][0] == '#' || !parse_number(words[0], size)) continue;  // comments, NCCL INFO lines, ...
    if (header.columns.empty()) continue;                               // numbers before any table
    if (words.size() != header.columns.size()) {
      out.skipped.push_back({where, fmt::format("expected {} columns ({}), found {}", header.columns.size(),
                                                fmt::join(header.columns, " "), words.size())});
      continue;
    }
    double time_us = 0, algbw = 0;
    if (size < 0 || size != std::floor(size) || !parse_number(words[header.time], time_us) || time_us <= 0 ||
        !parse_number(words[header.algbw], algbw)) {
      out.skipped.push_back({where, "size, time or algbw is not a number"});
      continue;
    }
    if (size >= kMaxBytes) {
      out.skipped.push_back({where, "size is not below 2^63 bytes"});
      continue;
    }
    // algbw is printed as size / time: a cut or mangled row disagrees with it.
    const double expected = size / (time_us * 1e3);
    if (algbw >= 0.01 && std::fabs(expected - algbw) > 0.02 * algbw + 0.006) {
      out.skipped.push_back({where, fmt::format("algbw {} does not match size / time = {:.2f} GB/s",
                                                words[header.algbw], expected)});
      continue;
    }
    // nccl-tests prints 0-byte rows when a size is below one element per rank (all_gather with
    // small -b): they time no transfer, so there is nothing to fit or compare.
    if (size == 0) continue;
    if (collective.empty())
      throw InputError(
          fmt::format("{}: cannot tell which collective this is (no 'Collective test starting' line); "
                      "name the file after it, e.g. all_reduce_perf.txt",
                      where));
    Measurement row;
    row.collective = collective;
    row.ranks = ranks.empty() ? defaults.ranks : static_cast<int>(ranks.size());
    row.nodes = hosts.empty() ? defaults.nodes : static_cast<int>(hosts.size());
    if (row.ranks <= 0)
      throw InputError(fmt::format(
          "{}: no 'Rank N ... on HOST' lines before this table: give --ranks and --nodes", where));
    if (row.nodes <= 0) row.nodes = 1;
    row.bytes = static_cast<std::uint64_t>(size);
    row.time_s = time_us * 1e-6;
    row.source = where;
    out.rows.push_back(row);
  }
}

}  // namespace aggsim::readers
