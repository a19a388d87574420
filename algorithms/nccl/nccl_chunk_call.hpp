#pragma once
// One member's call at chunk level (movement: chunk, the reference), as the chunk engine
// (nccl_chunk_engine.cpp) hands it to the algorithm's schedule (NcclAlgorithmModel::start_chunks):
// what the call moves and reduces, and how its connections behave (every piece one message, at
// most NCCL's slots in flight per connection, each receive usable a hop latency after it arrives).
// The engine pauses for the protocol's base latency before the schedule starts, joins its actors
// and hands the member call.result.
#include <fmt/format.h>

#include <Eigen/Core>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "algorithms/nccl/chunk_connection.hpp"
#include "algorithms/nccl/nccl_algorithm.hpp"

namespace aggsim {

struct NcclChunkCall {
  Comm& comm;
  int me;
  const NcclCallPlan& plan;
  const NcclGeometry& g;  // the algorithm's, on the call's channels
  const NcclView& view;
  const ProtocolCosts& costs;
  NcclOp op;
  NcclCollective collective;
  WireDtype dtype;
  Protocol proto;
  int channels, p, tag, slots;
  double network_channel_rate;  // bytes/s per channel and network connection, 0: none
  bool math;
  std::int64_t n, w;  // the proxy's values and the fp32 elements they stand for
  const Eigen::VectorXf& x;
  Eigen::VectorXf result;  // what the member ends with (zero where nothing is written)
  std::vector<sg4::ActorPtr> actors;

  // Starts an actor named `name` on the member's host, which the engine joins.
  void start(const std::string& name, std::function<void()> body) {
    actors.push_back(sg4::Actor::create(name, view.host_of(me), std::move(body)));
  }
  // The payload of proxy values standing for `wire_elements` fp32 elements.
  Payload payload(Eigen::VectorXf values, std::int64_t wire_elements) const {
    Payload out;
    out.values = std::move(values);
    out.wire_bytes = wire_of(static_cast<double>(wire_elements) * 4, proto, costs);
    return out;
  }
  // This member's own input over `r`, loaded as the op loads it.
  Eigen::VectorXf own(const Range& r) const {
    Eigen::VectorXf v(r.count);
    if (r.count > 0) op.load(v, x.segment(r.begin, r.count));
    return v;
  }
  // A piece from member `from` is usable by `to` this long after its bytes arrived: its route's
  // latency (chunk-level transfers carry none of their own) and the protocol's per-hop cost.
  double arrival_delay(int from, int to) const;
  // What one channel can move from member `from` to `to` (bytes/s, 0: no bound of its own).
  double channel_rate(int from, int to) const {
    return view.hop_class(from, to) == LinkClass::network ? network_channel_rate : 0;
  }
};

}  // namespace aggsim
