#pragma once
// What an algorithm sees of the rank it runs on: who it is, how to talk, and its random streams.
#include <cstdint>
#include <vector>

#include "sim/api/collective_call.hpp"
#include "sim/api/rank_layout.hpp"
#include "sim/comm/comm.hpp"
#include "sim/core/random.hpp"
#include "sim/metrics/math_log.hpp"

namespace aggsim {

struct RankContext {
  int rank = 0;
  int world = 1;
  Comm* comm = nullptr;
  sg4::Host* host = nullptr;
  const RankLayout* layout = nullptr;
  std::uint64_t seed = 0;
  int step = 0;
  // Where compressors add what they did to this rank's vectors this step (compress_error); null
  // when nothing measures it.
  CompressionTally* compression = nullptr;
  // The current aggregation call's record of how it ran (sim/api/collective_call.hpp); an algorithm
  // that chooses an algorithm, protocol or channel count per call fills it in. Null outside a call.
  CollectiveChoice* choice = nullptr;

  // A stream private to this rank, step and purpose.
  Rng rng(Stream purpose, std::uint64_t extra = 0) const {
    return make_rng(seed, purpose, static_cast<std::uint64_t>(rank),
                    (static_cast<std::uint64_t>(step) << 24) ^ extra);
  }
  // A stream shared by all ranks for this step (e.g. shared-seed random-k).
  Rng shared_rng(Stream purpose, std::uint64_t extra = 0) const {
    return make_rng(seed, purpose, ~std::uint64_t{0}, (static_cast<std::uint64_t>(step) << 24) ^ extra);
  }
  // The context of bucket `b` of a step: its own streams, so equal-sized buckets do not repeat
  // each other's draws (bucket 0 keeps the rank's, so one-bucket runs are unchanged). Every rank
  // derives the same seed, so shared streams stay shared.
  RankContext for_bucket(std::uint64_t b) const {
    RankContext c = *this;
    if (b > 0) c.seed = derive_seed(seed, Stream::compression, b);
    return c;
  }
  // Charges `flops` of work to this rank's host (simulated time passes). `what` names the work on
  // the timeline (output.trace): "compress", "decompress", "reduce", ...
  void compute(double flops, const char* what = "compute") const;
};

// Charges the reduction of `wire_bytes` of received data into the calling rank's own to its host
// (compute.reduce_speed; "reduce" on the timeline). Called wherever an algorithm reduces, with the
// wire size of what it reduces, so the cost is the same with the math plane on or off.
void charge_reduce(const Comm& comm, std::uint64_t wire_bytes);

// Reductions of several ranks done by one actor for them (a node's bundled transfers): rank k's
// `wire_bytes[k]` charged to its own host `hosts[k]` (its Comm's reduce cost), all at once, and the
// caller waits for the last. Each host spends what charge_reduce would charge there.
void charge_reduce_together(const std::vector<Comm*>& comms, const std::vector<sg4::Host*>& hosts,
                            const std::vector<std::uint64_t>& wire_bytes);

}  // namespace aggsim
