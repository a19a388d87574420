#pragma once
// What sharded data parallelism keeps on each rank, in bytes, following ZeRO's accounting
// (Rajbhandari et al., "ZeRO: Memory Optimizations Toward Training Trillion Parameter Models", 2020,
// section 3.1, with Adam): parameters and gradients at their dtype's width, and optimizer state of
// K bytes per parameter: Adam's two fp32 moments (8), plus an fp32 master copy of the parameters
// (4 more, K = 12) when parameters are kept in 16 bits. Each is divided by the shard group's size
// where the sharding partitions it.
#include <cstdint>
#include <vector>

namespace aggsim {

enum class FsdpSharding { full, grad_op, hybrid, optimizer };

struct FsdpMemoryInput {
  FsdpSharding sharding = FsdpSharding::full;
  int shard_group = 1;                       // ranks sharing each unit's shards
  std::uint64_t param_bytes = 4;             // per parameter (param_dtype)
  std::uint64_t grad_bytes = 4;              // per gradient element (reduce_dtype)
  bool prefetch = true;                      // a unit's gather overlaps the previous unit's compute
  std::vector<std::uint64_t> unit_elements;  // parameters of each unit, in forward order
};

struct FsdpMemory {
  double param_bytes_per_rank = 0;
  double grad_bytes_per_rank = 0;
  double optimizer_bytes_per_rank = 0;
  // The largest set of units whose parameters are gathered whole at once (prefetch included).
  double peak_gathered_bytes = 0;
};

FsdpMemory fsdp_memory(const FsdpMemoryInput& in);

}  // namespace aggsim
