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
  // `replicas` of `members` ranks each; `proxy_size` 0: timing only.
  ReplicaSync(int replicas, int members, std::int64_t proxy_size);
  // Hands in `part` of `values` (the rank's aggregated slice), waits for the replica's other ranks,
  // and leaves `values` holding the replica's whole vector of this step.
  void assemble(int replica, int step, const Range& part, Eigen::VectorXf& values);

 private:
  std::vector<simgrid::s4u::BarrierPtr> barriers_;
  // Two vectors per replica, by step parity: a rank that has passed step k's barrier writes step
  // k+1's part while slower ranks may still read step k's vector (step k+2's cannot start before
  // every rank has passed step k+1's barrier, after its read).
  std::vector<std::array<Eigen::VectorXf, 2>> vectors_;
};

}  // namespace aggsim
