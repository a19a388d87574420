#pragma once
// What one aggregation call reports about itself, beside the bytes and times the engine measures
// (collectives.csv). Before every call the engine points RankContext::choice at an empty record; an
// algorithm that chooses how to run the call (an NCCL-style tuner picking algorithm, protocol and
// channels) fills it in, every rank with the same values, and the engine reads one rank's. Algorithms
// that choose nothing leave it empty, and the columns stay empty.
#include <optional>
#include <string>

namespace aggsim {

struct CollectiveChoice {
  std::string nccl_algorithm;  // e.g. "ring", "tree"
  std::string protocol;        // e.g. "LL", "LL128", "Simple"
  int channels = 0;            // 0: not chosen
};

// What a call's traffic is: collectives.csv's `collective` column and the bus factor of its
// bandwidths. The first four are nccl-tests' collectives; a parameter server or a decentralized
// exchange has no bus factor (busbw empty), and a decentralized exchange leaves no rank with the
// reduction of all, so algbw is empty there too.
enum class CollectiveKind { all_reduce, all_gather, reduce_scatter, broadcast, parameter_server, neighbor_exchange };

// The name collectives.csv and summary.json write ("all_reduce", ...), and back (none: unknown).
const char* collective_kind_name(CollectiveKind kind);
std::optional<CollectiveKind> collective_kind_named(const std::string& name);

// nccl-tests' bus factor of a collective on p ranks, applied to nccl-tests' size (the collective's
// whole buffer: the gathered result of an all-gather, the input of a reduce-scatter): busbw = size x
// factor / time. 2(p-1)/p for all_reduce, (p-1)/p for all_gather and reduce_scatter, 1 for broadcast;
// none for the others. One definition for collectives.csv, summary.json, steps.csv, `aggsim perf`,
// `compare` and the calibration's report.
std::optional<double> nccl_tests_bus_factor(CollectiveKind kind, int ranks);

// Canonical collective name from nccl-tests/OSU/CSV/NCCL spellings ("all_reduce_perf", "allreduce",
// "osu_allreduce", "AllReduce"); empty when unknown.
std::string canonical_collective(const std::string& name);

}  // namespace aggsim
