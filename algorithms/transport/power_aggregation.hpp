#pragma once
#include <memory>

#include "algorithms/compression/powersgd.hpp"
#include "algorithms/memory/memory.hpp"
#include "sim/api/aggregator.hpp"

namespace aggsim {

// PowerSGD's aggregation over a reducing collective (mlbench-core's PowerAggregation). Throws
// InputError unless `op` adds (sum, avg, custom_avg): PowerSGD is linear. A null memory keeps nothing.
std::unique_ptr<Aggregator> make_power_aggregation(std::unique_ptr<Aggregator> collective, const ReduceOp& op,
                                                   PowerSgdOptions options, std::unique_ptr<Memory> memory);

}  // namespace aggsim
