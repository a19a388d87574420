#pragma once
// What one aggregation call reports about itself, beside the bytes and times the engine measures
// (collectives.csv). Before every call the engine points RankContext::choice at an empty record; an
// algorithm that chooses how to run the call (an NCCL-style tuner picking algorithm, protocol and
// channels) fills it in, every rank with the same values, and the engine reads one rank's. Algorithms
// that choose nothing leave it empty, and the columns stay empty.
#include <string>

namespace aggsim {

struct CollectiveChoice {
  std::string nccl_algorithm;  // e.g. "ring", "tree"
  std::string protocol;        // e.g. "LL", "LL128", "Simple"
  int channels = 0;            // 0: not chosen
};

// What a call's traffic is, for the bandwidth columns: nccl-tests' bus factor of the collective
// (busbw = wire bytes x factor / time, with p the ranks whose gradients it reduces). `all_reduce`:
// 2(p-1)/p; `all_gather` of every rank's payload: p-1 (each rank receives the others'); a parameter
// server or a decentralized exchange has no such factor (busbw empty); a decentralized exchange also
// leaves no rank with the reduction of all, so algbw is empty there too.
enum class CollectiveKind { all_reduce, all_gather, parameter_server, neighbor_exchange };

}  // namespace aggsim
