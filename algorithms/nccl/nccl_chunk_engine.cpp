// The chunk-level movement (movement: chunk, the reference): every piece one message, at most
// NCCL's slots in flight per connection, each receive usable a hop latency after it arrives. The
// algorithm's schedule (NcclAlgorithmModel::start_chunks) says which pieces go where; this engine
// sets the call up, waits out the protocol's base latency and collects the member's result.
#include <stdexcept>
#include <string>

#include "algorithms/nccl/nccl_algorithm.hpp"
#include "algorithms/nccl/nccl_chunk_call.hpp"

namespace aggsim {

double NcclChunkCall::arrival_delay(int from, int to) const {
  std::vector<sg4::Link*> links;
  double latency = 0;
  view.host_of(from)->route_to(view.host_of(to), links, &latency);
  return latency + costs.hop(view.hop_class(from, to), proto);
}

void NcclAlgorithmModel::start_chunks(NcclChunkCall& call) const {
  throw std::logic_error(std::string("chunk-level movement does not run NCCL's ") +
                         nccl_algorithm_name(call.plan.choice.algorithm));
}

void NcclCommunicator::run_chunks(Comm& comm, int me, Gradient& grad, const NcclCallPlan& plan,
                                  const ReduceOp& reduce_op, int world) {
  const NcclAlgorithm a = plan.choice.algorithm;
  const Protocol proto = plan.choice.protocol;
  const bool math = grad.values.size() > 0;
  const std::int64_t n = grad.values.size();
  NcclChunkCall call{comm,
                     me,
                     plan,
                     geometry(a, plan.choice.channels),
                     view_,
                     costs_,
                     NcclOp(reduce_op, world, options_.dtype),
                     options_.collective,
                     options_.dtype,
                     proto,
                     plan.choice.channels,
                     view_.size(),
                     1 << 20,
                     plan.chunking.slots,
                     network_channel_rate_,
                     math,
                     n,
                     static_cast<std::int64_t>(grad.wire_elements),
                     grad.values,
                     math ? Eigen::VectorXf(Eigen::VectorXf::Zero(n)) : Eigen::VectorXf(),
                     {}};
  comm.pause_until(sg4::Engine::get_clock() + costs_.base(a, proto));
  algorithm(a).start_chunks(call);
  for (auto& actor : call.actors) actor->join();
  // A broadcast moves bytes only (and runs at flow level).
  if (math && options_.collective != NcclCollective::broadcast) grad.values = std::move(call.result);
}

}  // namespace aggsim
