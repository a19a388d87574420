#pragma once
// What one simulated rank does each step. The rank's main actor computes the forward pass and then
// the backward pass bucket by bucket (FLOPs of the modeled network / host speed, times the rank's
// slowdown); with more than one bucket a second actor on the same host aggregates each bucket as
// soon as the backward pass releases it, so communication overlaps the rest of the backward pass
// (PyTorch DDP's schedule); with overlap: false the rank's own actor aggregates one tensor after
// another once the backward pass is done (mlbench's by-layer schedule). With algorithm.every > 1
// only every k-th step aggregates; the others apply the rank's own gradient (or keep its locally
// updated weights) without a message. The math plane runs alongside: the proxy problem's real gradient (or
// locally updated weights, with apply_to: weights) is cut into the buckets, aggregated, and applied.
#include <map>
#include <memory>
#include <optional>
#include <simgrid/s4u.hpp>
#include <vector>

#include "sim/api/aggregator.hpp"
#include "sim/engine/collective_log.hpp"
#include "sim/engine/parallel_layout.hpp"
#include "sim/engine/replica_sync.hpp"
#include "sim/engine/replay.hpp"
#include "sim/engine/simulation.hpp"
#include "sim/workload/compute_model.hpp"
#include "sim/workload/evaluator.hpp"
#include "sim/workload/trainer.hpp"

namespace aggsim {

// Read-only for the ranks, except the log and the evaluator they fill in.
struct RunShared {
  const Scenario& scenario;
  std::vector<GroupPlan> plans;  // one per data-parallel group (sim/engine/parallel_layout.hpp)
  ComputeModel compute;
  const Workload* workload = nullptr;  // null: synthetic gradients, aggregation only
  Evaluator* evaluator = nullptr;
  StepLog& log;
  CollectiveLog& calls;  // one record per aggregation call (collectives.csv)
  const SimulationHooks& hooks;
  MathLog* math = nullptr;  // math on: agg_error, compress_error, rank_spread
  StepsDone& steps_done;
  ReplayBook* replay = nullptr;  // null: every step simulated
  // Sharded data parallelism's schedule (sim/engine/sharded_step.hpp); empty: DDP's.
  std::optional<ParameterSharding> sharding = {};
  // A parallel layout's model replicas, which meet after each step; null without a layout.
  ReplicaSync* replicas = nullptr;
};

struct RankState {
  RankContext ctx;
  Comm comm;
  std::vector<std::unique_ptr<Aggregator>> aggregators;  // one per bucket: per-layer state stays apart
  std::unique_ptr<RankTrainer> trainer;
  // Hand-over between the compute and communication actors, reused every step.
  std::vector<Gradient> buckets;
  // What the rank's compressors did this step (RankContext::compression points here), kept per
  // step for the compute actor, which reports it after the step's aggregation.
  CompressionTally compression;
  std::map<int, CompressionTally> compression_of_step;
  sg4::SemaphorePtr ready = sg4::Semaphore::create(0);
  sg4::SemaphorePtr done = sg4::Semaphore::create(0);
  // Replayed steps have no backward pass to overlap: from the first one on the compute actor
  // aggregates its buckets itself and the communication actor has ended (two SimGrid
  // synchronisations a step fewer; the times come from the record either way).
  bool aggregates_alone = false;
  // The step whose forward and backward pass the compute actor is in, or -1: a call that ends while
  // its step's compute goes on ran hidden behind it up to its end.
  int computing = -1;
  // The nodes of the rank's data-parallel group (parallel layouts, sim/engine/parallel_layout.hpp);
  // null: the rank's group is the whole run.
  const RankLayout* group_layout = nullptr;
  // The rank's data-parallel group's plan (its stage's share of the layers, its slice of the proxy
  // vector), and its data rank: whose data it trains on, and under a parallel layout its model
  // replica (the rank's own number without a layout).
  const GroupPlan* plan = nullptr;
  int data_rank = 0;
  // `comm` numbers the ranks of the rank's data-parallel group (the whole run unless a parallel
  // layout cuts it into groups); ctx.rank stays the rank's global number.
  RankState(int group_rank, int group_size) : comm(group_rank, group_size) {}
};

// What the aggregation algorithm sees: the rank's data-parallel group as its world (comm's
// numbering and the group's nodes); the rank's own context otherwise.
RankContext algorithm_context(const RankState& st);

// The step's proxy vector: gradient, or weights after a local step (apply_to: weights).
Eigen::VectorXf local_values(RankState& st, const RunShared& run, int step);
// The buckets take copies of their segments of `values`, which gives up its storage while they are
// aggregated; join_buckets rebuilds it from the buckets and empties them.
void cut_into_buckets(RankState& st, Eigen::VectorXf& values);
void join_buckets(RankState& st, Eigen::Index size, Eigen::VectorXf& values);

// Starts the rank's actor(s) on its host.
void start_rank(RankState& st, const RunShared& run);

}  // namespace aggsim
