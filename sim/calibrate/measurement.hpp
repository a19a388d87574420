#pragma once
// Measured collective timings read from benchmark logs: nccl-tests (`all_reduce_perf` and
// friends), OSU micro-benchmarks (osu_latency, osu_bw, osu_allreduce) and a plain CSV
// (collective,ranks,nodes,bytes,time). One reader per format; read_measurements picks one.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "algorithms/nccl/calibration/nccl_env.hpp"
#include "sim/api/collective_call.hpp"

namespace aggsim {

struct Measurement {
  std::string collective;  // all_reduce | all_gather | reduce_scatter | broadcast | sendrecv
  int ranks = 0;
  int nodes = 0;
  std::uint64_t bytes = 0;  // nccl-tests' "size" column: the collective's total buffer
  double time_s = 0;        // one operation (nccl-tests: out-of-place time, else in-place)
  std::string source;       // "file:line" of the row
  bool in_place = false;    // nccl-tests: the time is the in-place column's (no out-of-place one)
  // NCCL's own choice for this row's calls, from its per-call tuning lines (NCCL_DEBUG=INFO,
  // NCCL_DEBUG_SUBSYS=TUNING): the most frequent one among the calls of this collective and size.
  // Spelt as collectives.csv spells it ("ring", "tree", "nvls", "nvls_tree", "collnet_direct",
  // "collnet_chain", "pat"; "ll", "ll128", "simple"; channels 0 when the line does not say).
  // Empty when the log has no tuning line for it.
  CollectiveChoice observed;
  std::string observed_source;  // "file:line" of the first tuning line with that choice
  // The communicator's channels from NCCL's init lines of this row's file (MeasurementFile::
  // observed_channels), 0 when the log does not say.
  int init_channels = 0;
  // What the log's NCCL settings (its launch line, NCCL's "set by environment" lines) told NCCL to
  // run for this row's collective (MeasurementFile::nccl_settings).
  NcclEnvChoice env;
};

// What a log may not say; 0 or empty = unknown.
struct MeasurementDefaults {
  int ranks = 0;           // --ranks, or --shape's for this file
  int nodes = 0;           // --nodes, or --shape's
  std::string collective;  // --collective: for nccl-tests logs that name none (no "Collective test
                           // starting" line, a file name that does not tell)
  // "--shape FILE=RxN" when ranks and nodes came from it: they then override the log's own
  // "Rank N ... on HOST" lines, which must agree with them.
  std::string shape_option;
};

// A line that looked like data but could not be read, with why.
struct SkippedLine {
  std::string where;  // "file:line"
  std::string why;
};

struct MeasurementFile {
  std::vector<Measurement> rows;
  std::vector<SkippedLine> skipped;
  std::vector<SkippedLine> warnings;  // read, but worth a look (two choices NCCL made for one size)
  // NCCL's init lines: the collective channels ("N coll channels, ..." or the "Channel 00/08 :"
  // ring lines) and the NVLS channels ("K nvls channels"); 0 when the log does not say.
  int observed_channels = 0;
  int observed_nvls_channels = 0;
  std::string observed_channels_source;  // "file:line" of the line it was read from
  std::map<std::string, NcclSetting> nccl_settings;  // NCCL_* settings the log states, by name
};

// Reads one log (format detected from its content). Throws InputError when the file cannot be read,
// when a row's rank count is unknown, or when it yields no measurement at all.
MeasurementFile read_measurement_file(const std::string& file, const MeasurementDefaults& defaults);

// The same from text already in memory (`label` names it in messages).
MeasurementFile parse_measurements(const std::string& text, const std::string& label,
                                   const MeasurementDefaults& defaults);

// nccl-tests' bus-bandwidth factor of a collective on n ranks (busbw = algbw * factor).
double bus_bandwidth_factor(const std::string& collective, int ranks);

// The names --collective takes, as canonical_collective returns them.
const std::vector<std::string>& collective_names();

// The --collective option of calibrate, compare and perf, one parser for the three: one of
// collective_names(), as given; anything else (another spelling, a misspelt name, an empty one) is
// an InputError that names the option and lists the names.
std::string collective_option(const std::string& given);

}  // namespace aggsim
