#pragma once
// The meeting of a call's members (one per call, shared by them): their inputs, the call's
// reduction, and at flow level the call's streams and times (nccl_flow_engine.cpp).
#include <Eigen/Core>
#include <memory>
#include <simgrid/s4u.hpp>
#include <vector>

#include "algorithms/nccl/nccl_algorithm.hpp"

namespace aggsim {

// At flow level, what a call runs: its streams and times. It depends only on the call's size (its
// plan, the communicator's geometry and the platform are fixed), so the calls of one size (a
// bucket in every step) share the first one's (NcclOptions::reuse_flow_plans).
struct NcclCommunicator::FlowPlan {
  double chain = 0;  // the pipeline's own time, from the streams' start (chain_time)
  Combine combine = Combine::later;
  // The call's streams, each member's outgoing and incoming ones, and the time the busiest link
  // needs for all it carries (every stream is paced to end then: a pipeline runs no edge faster
  // than its slowest).
  struct Stream {
    int from = 0, to = 0, channel = 0;
    std::uint64_t wire_bytes = 0;
    double load_scale = 1;  // NVLS: what its bytes cost the link, over the bytes (1 / nvls_efficiency)
    int merged = 1;         // the channels' streams of this pair it carries (merge_streams)
  };
  std::vector<Stream> streams;
  std::vector<std::vector<std::size_t>> out, in;  // by member: indices into streams
  double pace_time = 0;
  double stream_latency = 0;  // the longest route latency among the streams
};

struct NcclCommunicator::Meeting {
  sg4::BarrierPtr barrier;
  std::vector<Gradient*> inputs;
  int left = 0;
  std::shared_ptr<const FlowPlan> flow;  // set by the first member to start the call
  double last_end = 0;  // the latest stream end of the call
  double last_hop = 0;  // the last hop's latency beyond the wire
  bool reduced = false;
  Eigen::VectorXf result;
};

}  // namespace aggsim
