#pragma once
// Measured collective timings read from benchmark logs: nccl-tests (`all_reduce_perf` and
// friends), OSU micro-benchmarks (osu_latency, osu_bw, osu_allreduce) and a plain CSV
// (collective,ranks,nodes,bytes,time). One reader per format; read_measurements picks one.
#include <cstdint>
#include <string>
#include <vector>

namespace aggsim {

struct Measurement {
  std::string collective;  // all_reduce | all_gather | reduce_scatter | broadcast | sendrecv
  int ranks = 0;
  int nodes = 0;
  std::uint64_t bytes = 0;  // nccl-tests' "size" column: the collective's total buffer
  double time_s = 0;        // one operation (nccl-tests: out-of-place time)
  std::string source;       // "file:line" of the row
};

// What a log may not say (OSU prints no rank or node count); 0 = unknown.
struct MeasurementDefaults {
  int ranks = 0;
  int nodes = 0;
};

// A line that looked like data but could not be read, with why.
struct SkippedLine {
  std::string where;  // "file:line"
  std::string why;
};

struct MeasurementFile {
  std::vector<Measurement> rows;
  std::vector<SkippedLine> skipped;
};

// Reads one log (format detected from its content). Throws InputError when the file cannot be read,
// when a row's rank count is unknown, or when it yields no measurement at all.
MeasurementFile read_measurement_file(const std::string& file, const MeasurementDefaults& defaults);

// The same from text already in memory (`label` names it in messages).
MeasurementFile parse_measurements(const std::string& text, const std::string& label,
                                   const MeasurementDefaults& defaults);

// nccl-tests' bus-bandwidth factor of a collective on n ranks (busbw = algbw * factor).
double bus_bandwidth_factor(const std::string& collective, int ranks);

// Canonical collective name from nccl-tests/OSU/CSV spellings ("all_reduce_perf", "allreduce",
// "osu_allreduce"); empty when unknown.
std::string canonical_collective(const std::string& name);

}  // namespace aggsim
