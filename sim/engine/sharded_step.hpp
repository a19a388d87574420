#pragma once
// The step of a rank under sharded data parallelism (AlgorithmRun::sharding; sim/api/aggregator.hpp):
// units' parameters gathered around their forward and backward compute, each unit's gradients
// reduced to the rank's shard as its backward ends, the shard updated, and the weights whole again
// at the next gathers. The evaluator and the after_step hook see a step's weights once they are
// whole: after the next step's forward pass, or after the gather that ends the last step (and every
// step of ZeRO-1, which gathers after the optimizer step).
#include "sim/engine/rank_actor.hpp"

namespace aggsim {

// Runs every step of the scenario on this rank's actor (no second actor: compute runs beside the
// collectives as asynchronous executions on the rank's host).
void run_sharded_rank(RankState& st, const RunShared& run);

}  // namespace aggsim
