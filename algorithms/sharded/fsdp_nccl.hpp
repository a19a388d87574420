#pragma once
// fsdp's collectives through NCCL's communicator (`collectives: nccl`): each shard group's
// reduce-scatters and all-gathers run NCCL's ring with NCCL's protocol and channel choice, order and
// op semantics (algorithms/nccl/ring_shards.hpp), and hybrid's all-reduce of a shard across the
// groups runs nccl_allreduce's communicator (NCCL's choice of ring, tree or NVLS).
#include <cstdint>
#include <memory>
#include <vector>

#include "algorithms/registry.hpp"

namespace aggsim {

struct FsdpNcclLayout {
  int world = 1;
  int group_size = 1;                              // consecutive ranks sharing shards
  std::uint64_t param_bytes = 4, reduce_bytes = 4;  // per element on the wire
};

// fsdp's keys for NCCL (protocol, movement), refused with `collectives: ring`.
std::vector<ParamSpec> fsdp_nccl_param_specs();
// Checks the keys: throws ParamError at `protocol` or `movement` when set with collectives: ring.
void check_fsdp_collective_keys(const Params& params);
// A key's value, or `absent` where the scenario leaves it out.
std::string fsdp_param_or(const Params& params, const std::string& key, const std::string& absent);

// A rank's NCCL collectives: aggregate() reduce-scatters (then all-reduces hybrid's shard across the
// groups) and leaves the rank its shard (nccl_shard of its group; the rest zero); gather_parameters()
// all-gathers. Made once the platform is built (cfg.hosts()); the aggregators share the communicators.
std::function<std::unique_ptr<Aggregator>()> fsdp_nccl_aggregators(const AlgorithmConfig& cfg,
                                                                   const FsdpNcclLayout& layout);

}  // namespace aggsim
