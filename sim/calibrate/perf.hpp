#pragma once
// `aggsim perf`: nccl-tests' table for a simulated cluster. The scenario's algorithm runs one
// collective at each size from --min to --max (times --factor), on the scenario's own ranks and
// platform, each size one child simulation as for `aggsim compare`; the rows read as
// all_reduce_perf's out-of-place columns, so a planned cluster can be diffed against a measured one.
#include <cstdint>
#include <string>
#include <vector>

namespace aggsim {

struct PerfOptions {
  std::string scenario;
  std::vector<std::string> overrides;  // --set key=value
  std::string collective = "all_reduce";
  std::uint64_t min_bytes = 8, max_bytes = 8ull << 30;
  double factor = 2;
  std::vector<std::string> simgrid_args;
  std::string exe;  // the aggsim binary
  int jobs = 1;
};

struct PerfRow {
  std::uint64_t bytes = 0;  // nccl-tests' size: the collective's whole buffer
  std::uint64_t count = 0;  // elements, as nccl-tests prints them (per rank for gathers and scatters)
  double time_s = 0;
  double algbw_GBps = 0, busbw_GBps = 0;
  std::string choice;          // NCCL algorithm/protocol simulated ("ring/simple"), if any
  int in_measured_range = -1;  // as aggsim compare's columns: 1/0 with a calibration that records it, else -1
  int choice_observed = -1;
};

struct PerfTable {
  std::string collective;
  int ranks = 0, nodes = 0;
  std::vector<PerfRow> rows;
};

// The sizes nccl-tests would run: min, min x factor, ... up to max, each rounded down to whole
// float elements per rank (all_gather, reduce_scatter: ranks x 4 bytes), sizes of no element left out.
// Each is a simulation: a run takes at most kMaxPerfSizes of them, and --factor at most
// kMaxPerfSteps multiplications from --min to --max; beyond, InputError naming the option, before
// any size is planned.
constexpr std::size_t kMaxPerfSizes = 1024;
constexpr double kMaxPerfSteps = 1 << 24;
std::vector<std::uint64_t> perf_sizes(const PerfOptions& options, int ranks);

PerfTable perf(const PerfOptions& options);

// all_reduce_perf's layout (size, count, type, redop, root, time, algbw, busbw, #wrong) and its
// closing "Avg bus bandwidth" line.
std::string perf_text(const PerfTable& table);
// collective,ranks,nodes,bytes,count,time_s,algbw_GBps,busbw_GBps,choice,in_measured_range,choice_observed
std::string perf_csv(const PerfTable& table);

}  // namespace aggsim
