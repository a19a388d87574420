// OSU micro-benchmarks: osu_latency (one-way latency in us), osu_bw (MB/s of a window of messages)
// and osu_allreduce (average latency in us). OSU prints no rank or node count: point-to-point
// tests have 2 ranks, on 2 nodes unless told otherwise; osu_allreduce needs --ranks.
#include <fmt/format.h>

#include <cmath>

#include "sim/calibrate/readers.hpp"
#include "sim/core/error.hpp"

namespace aggsim::readers {

void read_osu(const std::vector<std::string>& lines, const std::string& label,
              const MeasurementDefaults& defaults, MeasurementFile& out) {
  enum class Kind { unknown, latency, bandwidth, allreduce } kind = Kind::unknown;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const std::string& line = lines[i];
    const std::string where = fmt::format("{}:{}", label, i + 1);
    if (line.rfind("# OSU ", 0) == 0) {
      if (line.find("Allreduce") != std::string::npos)
        kind = Kind::allreduce;
      else if (line.find("Bi-Directional") != std::string::npos)
        kind = Kind::unknown;
      else if (line.find("Bandwidth") != std::string::npos)
        kind = Kind::bandwidth;
      else if (line.find("Latency") != std::string::npos)
        kind = Kind::latency;
      else
        throw InputError(
            fmt::format("{}: unsupported OSU test (read: osu_latency, osu_bw, osu_allreduce)", where));
      continue;
    }
    const auto words = split_words(line);
    double size = 0, value = 0;
    if (words.empty() || words[0][0] == '#' || !parse_number(words[0], size)) continue;
    if (kind == Kind::unknown) {
      out.skipped.push_back({where, "row before an OSU banner naming a supported test"});
      continue;
    }
    if (words.size() < 2 || !parse_number(words[1], value) || value <= 0 || size < 0 ||
        size != std::floor(size) || size >= kMaxBytes) {
      out.skipped.push_back(
          {where, "expected 'size value' with a positive value and a size below 2^63 bytes"});
      continue;
    }
    Measurement row;
    row.bytes = static_cast<std::uint64_t>(size);
    row.source = where;
    if (kind == Kind::allreduce) {
      row.collective = "all_reduce";
      row.ranks = defaults.ranks;
      if (row.ranks <= 0)
        throw InputError(fmt::format("{}: osu_allreduce does not print its rank count: give --ranks", where));
      row.nodes = defaults.nodes > 0 ? defaults.nodes : row.ranks;
      row.time_s = value * 1e-6;
    } else {
      if (size == 0) continue;  // a zero-byte message has no time per byte to compare
      if (!defaults.shape_option.empty() && defaults.ranks != 2)
        throw InputError(fmt::format("{}: a point-to-point OSU test runs 2 ranks, but {} says {}", where,
                                     defaults.shape_option, defaults.ranks));
      row.collective = "sendrecv";
      row.ranks = 2;
      row.nodes = defaults.nodes > 0 ? defaults.nodes : 2;
      // osu_bw streams windows of messages: the time of one is its size over the rate (MB = 1e6 B).
      row.time_s = kind == Kind::latency ? value * 1e-6 : size / (value * 1e6);
    }
    add_row(out, row);
  }
}

}  // namespace aggsim::readers
