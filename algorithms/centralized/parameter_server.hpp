#pragma once
// Pieces shared by the synchronous and the asynchronous parameter server: who serves, who works,
// which shard of the gradient each server owns, and how pushes and pulls are encoded.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "algorithms/collectives/group.hpp"
#include "algorithms/registry.hpp"

namespace aggsim {

// What the servers of one run observed (summary.json: max_staleness, deferred_pulls, discarded_pushes).
struct ParameterServerStats {
  int max_staleness = 0;               // asynchronous: largest lead over the slowest worker at a pull
  std::uint64_t deferred_pulls = 0;    // asynchronous: pulls held back by the staleness bound
  std::uint64_t discarded_pushes = 0;  // k-of-n: late gradients received and dropped
};

struct PsOptions {
  int servers = 1;         // shards, served by ranks 0..servers-1
  bool dedicated = false;  // servers only serve (contribute no gradient)
  int aggregate = 0;       // k of k-of-n (synchronous); the number of workers when 0
  bool asynchronous = false;
  int staleness = 0;  // tau (asynchronous)
  // Pull by a binomial-tree broadcast over the workers rooted at each server, instead of one
  // unicast per worker from the server (ATOMO's comm-type: Bcast). Synchronous only.
  bool broadcast_pull = false;
  // Platform hosts of ranks 0..servers-1, in shard order; empty: the first hosts in natural order.
  std::vector<std::string> server_hosts;
  // The run's statistics, shared by every rank's aggregator (the prepare stage makes them).
  std::shared_ptr<ParameterServerStats> stats = std::make_shared<ParameterServerStats>();
};

// Ranks 0..servers-1 serve one shard each. Colocated: every rank is a worker. Dedicated: ranks
// servers..world-1 are the workers.
struct PsRoles {
  int world = 1;
  int servers = 1;
  bool dedicated = false;

  int first_worker() const { return dedicated ? servers : 0; }
  int workers() const { return world - first_worker(); }
  bool is_server(int rank) const { return rank < servers; }
  bool is_worker(int rank) const { return rank >= first_worker(); }
  int worker_index(int rank) const { return rank - first_worker(); }
  int worker_rank(int index) const { return index + first_worker(); }
};

// Channels apart from the collectives' channel 0, so pushes and pulls never match each other.
constexpr int kPushChannel = 1;
constexpr int kPullChannel = 2;
// Payload tag of the message that tells a server a worker will push no more.
constexpr std::int64_t kLastPush = -1;

// Shard s of S of a gradient: its ranges on both planes, and the tensor the compressor sees (the
// id keeps per-shard compressor state, e.g. error-feedback residuals, apart).
struct Shard {
  ChunkView view;
  TensorDesc tensor;
};
Shard shard_of(const Gradient& grad, int servers, int s);

// A worker's push of one shard of its gradient, compressed (encode work charged to its host).
Payload push_payload(RankContext& ctx, Compressor& compressor, const Gradient& grad, const Shard& shard);
// A server's decoding of one push (decode work charged to its host).
Eigen::VectorXf decode_push(RankContext& ctx, const Compressor& compressor, const Payload& push,
                            const Shard& shard);
// The shard's dense fp32 size on the wire.
std::uint64_t shard_bytes(const Shard& shard);
// The dense fp32 pull of one shard.
Payload pull_payload(const Eigen::VectorXf& values, const Shard& shard);

std::unique_ptr<Aggregator> make_sync_parameter_server(const AlgorithmConfig& cfg, const PsOptions& options);
std::unique_ptr<Aggregator> make_async_parameter_server(const AlgorithmConfig& cfg, const PsOptions& options);

}  // namespace aggsim
