#pragma once
// Under a parallel layout a model replica is the tensor x pipeline ranks of one data rank: each
// aggregates its own part of the model, and the replica's next step needs all of them (the
// optimizer step of every part before the next forward pass, as Megatron-LM's step does). So the
// ranks of a replica meet after each step's aggregation at a barrier that costs no simulated
// traffic; with the math plane on, each also hands in its aggregated part and leaves with the
// replica's whole vector, assembled in-process (the tensor- and pipeline-parallel traffic that would
// carry it is not simulated).
#include <Eigen/Core>
#include <array>
#include <simgrid/s4u.hpp>
#include <vector>

#include "sim/api/partition.hpp"

namespace aggsim {

class ReplicaSync {
 public:
  // `replicas` of `members` ranks each; `proxy_size` 0: timing only. `sharded`: the groups shard
  // their slices (fsdp), and the math meets through keep_shard / take_others instead of assemble's
  // vectors.
  ReplicaSync(int replicas, int members, std::int64_t proxy_size, bool sharded = false);
  // Hands in `part` of `values` (the rank's aggregated slice), waits for the replica's other ranks,
  // and leaves `values` holding the replica's whole vector of this step.
  void assemble(int replica, int step, const Range& part, Eigen::VectorXf& values);

  // Sharded groups: each rank holds its shard of its slice up to date, so the model's updated
  // weights of a step exist whole only across all ranks. A rank hands in its updated `shard` of
  // `weights` after step `step`'s update, and takes every value outside its slice `own` once all
  // ranks have handed in theirs: in-process, costing no simulated time, so the caller must know
  // they have (sharded_step.cpp says when).
  void keep_shard(int step, const Range& shard, const Eigen::VectorXf& weights);
  void take_others(int step, const Range& own, Eigen::VectorXf& weights) const;

 private:
  std::vector<simgrid::s4u::BarrierPtr> barriers_;
  // Two vectors per replica, by step parity: a rank that has passed step k's barrier writes step
  // k+1's part while slower ranks may still read step k's vector (step k+2's cannot start before
  // every rank has passed step k+1's barrier, after its read).
  std::vector<std::array<Eigen::VectorXf, 2>> vectors_;
  // Sharded groups: the world's updated weights, by step parity. A rank writes step k+2's shard only
  // after every rank that reads it has read step k's (before its backward pass of step k+1): the
  // writer's reduce-scatter of step k+2 (hybrid: and all-reduce across the groups) needs its
  // groups' members in step k+2, past their replicas' meetings of step k+1, whose ranks' own
  // reduce-scatters of step k+1 needed each reader's.
  std::array<Eigen::VectorXf, 2> weights_;
};

}  // namespace aggsim
