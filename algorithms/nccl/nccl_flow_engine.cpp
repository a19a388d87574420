// The flow-level movement (the default): each channel edge one stream of all the bytes it carries,
// started at once and shared max-min with all other traffic by SimGrid; the call ends when the
// streams have ended (plus the last hop's latency) or when the pipeline's dependency chain allows,
// whichever is later, after the protocol's base latency. The algorithm says which streams a call
// runs and what its chain is (nccl_algorithm.hpp).
#include <algorithm>
#include <unordered_map>

#include "algorithms/nccl/nccl_algorithm.hpp"
#include "algorithms/nccl/nccl_meeting.hpp"
#include "algorithms/nccl/nccl_shards.hpp"

XBT_LOG_EXTERNAL_DEFAULT_CATEGORY(aggsim_nccl);

namespace aggsim {

// Every stream of a call (what each channel edge carries in all, as the algorithm lays them out),
// and the pace.
void NcclCommunicator::plan_streams(FlowPlan& m, const NcclCallPlan& plan, const Geometry& g,
                                    std::uint64_t wire_elements, bool traced) const {
  const NcclAlgorithm a = plan.choice.algorithm;
  const Protocol proto = plan.choice.protocol;
  const int p = view_.size();
  const auto w = static_cast<std::int64_t>(wire_elements);
  auto add = [&](int from, int to, double data_bytes, int c, double load_scale) {
    if (data_bytes <= 0 || from == to) return;
    m.streams.push_back({from, to, c, wire_of(data_bytes, proto, costs_), load_scale});
  };
  algorithm(a).streams(plan, g, w, add);
  m.out.assign(static_cast<std::size_t>(p), {});
  m.in.assign(static_cast<std::size_t>(p), {});
  std::unordered_map<const sg4::Link*, double> load;
  for (std::size_t i = 0; i < m.streams.size(); ++i) {
    const auto& st = m.streams[i];
    m.out[static_cast<std::size_t>(st.from)].push_back(i);
    m.in[static_cast<std::size_t>(st.to)].push_back(i);
    double latency = 0;
    // The network gives the stream its links' rate times its bandwidth factor (a calibration's):
    // paced at the bare rate, a factor above 1 would speed nothing up.
    const double wire = static_cast<double>(st.wire_bytes);
    const double cost = wire * st.load_scale / rate_factor(view_.hop_class(st.from, st.to), wire);
    for (const sg4::Link* l : g.route(st.from, st.to, p)) {
      load[l] += cost;
      latency += l->get_latency();
    }
    m.stream_latency = std::max(m.stream_latency, latency);
  }
  const sg4::Link* busiest = nullptr;
  for (const auto& [link, bytes] : load)
    if (bytes / link->get_bandwidth() > m.pace_time) {
      m.pace_time = bytes / link->get_bandwidth();
      busiest = link;
    }
  // A channel moves no more than its rate (channel_rate): per network stream, and out of a member
  // along a tree (tree_send_share).
  if (const double pace = channel_pace_time(m, g); pace > m.pace_time) {
    m.pace_time = pace;
    busiest = nullptr;
  }
  if (busiest)
    XBT_VERB("%zu streams, busiest link %s: %.9g s for %.0f bytes", m.streams.size(), busiest->get_cname(),
             m.pace_time, load[busiest]);
  if (options_.merge_streams && !(options_.merge_unless_traced && traced)) merge_streams(m);
}

// The channels' streams between one pair of members start together on one route at one pace, so
// one stream carrying all their bytes at the sum of their rates stands for them (rates the network
// grants in full end each at the same moment; see merge_streams in README).
void NcclCommunicator::merge_streams(FlowPlan& m) const {
  std::unordered_map<std::uint64_t, std::size_t> first;  // (from, to) -> index in merged
  std::vector<FlowPlan::Stream> merged;
  const auto p = static_cast<std::uint64_t>(view_.size());
  for (const auto& st : m.streams) {
    const std::uint64_t key = static_cast<std::uint64_t>(st.from) * p + static_cast<std::uint64_t>(st.to);
    const auto [it, fresh] = first.emplace(key, merged.size());
    if (fresh) {
      merged.push_back(st);
      continue;
    }
    auto& into = merged[it->second];
    into.wire_bytes += st.wire_bytes;
    into.merged += st.merged;
  }
  m.streams = std::move(merged);
  m.out.assign(static_cast<std::size_t>(view_.size()), {});
  m.in.assign(static_cast<std::size_t>(view_.size()), {});
  for (std::size_t i = 0; i < m.streams.size(); ++i) {
    m.out[static_cast<std::size_t>(m.streams[i].from)].push_back(i);
    m.in[static_cast<std::size_t>(m.streams[i].to)].push_back(i);
  }
}

std::shared_ptr<const NcclCommunicator::FlowPlan> NcclCommunicator::flow_plan(const NcclCallPlan& plan,
                                                                            NcclAlgorithm a, int channels,
                                                                            std::uint64_t wire_elements,
                                                                            bool traced) {
  std::shared_ptr<const FlowPlan>* slot = nullptr;
  if (options_.reuse_flow_plans) {
    slot = &flow_plans_[{wire_elements, traced}];
    if (*slot) return *slot;
  }
  auto f = std::make_shared<FlowPlan>();
  const Geometry& g = geometry(a, channels);
  const Chain chain = algorithm(a).chain_time(plan, g);
  f->chain = chain.time;
  f->combine = chain.combine;
  plan_streams(*f, plan, g, wire_elements, traced);
  if (slot) *slot = f;
  return f;
}

void NcclCommunicator::run_flow(Comm& comm, int me, Gradient& grad, Meeting& m, const NcclCallPlan& plan,
                                const ReduceOp& op, int world) {
  const NcclAlgorithm a = plan.choice.algorithm;
  const Protocol proto = plan.choice.protocol;
  const int channels = plan.choice.channels;
  // Every member has called: the pipeline runs from the last arrival. A replayed call takes its
  // times from the step it repeats, so it skips this meeting (a synchronisation of every rank);
  // the one after the streams, which the reduction needs, stays.
  if (!comm.replaying()) m.barrier->wait();
  const double start = sg4::Engine::get_clock() + costs_.base(a, proto);
  if (!m.flow) {
    m.flow = flow_plan(plan, a, channels, grad.wire_elements, comm.tracer() != nullptr);
    m.last_end = start;
  }
  const FlowPlan& f = *m.flow;
  comm.pause_until(start);
  // Each member receives its incoming streams and sends its outgoing ones.
  std::vector<SendHandle> sends;
  std::vector<RecvHandle> receives;
  const int tag = 1 << 20;  // streams' channel numbers, apart from any message of the rank
  for (std::size_t i : f.in[static_cast<std::size_t>(me)]) {
    const auto& st = f.streams[i];
    receives.push_back(comm.accept_stream(view_.rank_of(st.from), tag + st.channel));
  }
  for (std::size_t i : f.out[static_cast<std::size_t>(me)]) {
    const auto& st = f.streams[i];
    const double rate = f.pace_time > 0 ? static_cast<double>(st.wire_bytes) / f.pace_time : 0;
    sends.push_back(comm.start_stream(view_.rank_of(st.to), st.wire_bytes, tag + st.channel, rate, st.merged));
    m.last_hop = std::max(m.last_hop, costs_.hop(view_.hop_class(st.from, st.to), proto));
  }
  for (auto& r : receives) {
    double arrived = 0;
    r.wait(&arrived);
    m.last_end = std::max(m.last_end, arrived);
  }
  for (auto& s : sends) m.last_end = std::max(m.last_end, s.wait());
  m.barrier->wait();  // every stream of the call has ended
  const double streams_end = m.last_end + m.last_hop;
  if (me == 0)
    XBT_VERB("%s/%s, %d channels, %d loops: start %.9g, chain %.9g, streams end %.9g (+%.3g)",
             nccl_algorithm_name(a), protocol_name(proto), channels, plan.loops, start, f.chain, m.last_end,
             m.last_hop);
  // The streams' time beyond their pace: what other traffic took from them.
  const double busy = std::max(f.pace_time, m.last_end - start - f.stream_latency);
  const double rest = 1 - 1.0 / plan.loops;  // the pieces after the first
  switch (f.combine) {
    case Combine::later:  // every edge busy from the start: whichever ends later
      comm.pause_until(std::max(start + f.chain, streams_end));
      break;
    case Combine::pipeline:  // the pipeline's own time, slowed as much as other traffic slowed its streams
      comm.pause_until(std::max(start + f.chain + (busy - f.pace_time) * rest, streams_end));
      break;
    case Combine::additive:  // the first piece's way, then the others at the busiest link's pace
      comm.pause_until(std::max(start + f.chain + busy * rest, streams_end));
      break;
  }
  if (options_.collective == NcclCollective::broadcast || grad.values.size() == 0) return;
  if (!m.reduced) {
    std::vector<const Eigen::VectorXf*> inputs;
    for (const Gradient* in : m.inputs) inputs.push_back(&in->values);
    m.result =
        options_.collective == NcclCollective::all_reduce
            ? nccl_reduce(view_, plan, inputs, op, world, options_.dtype)
            : nccl_shard_collective(view_, plan, options_.collective, inputs, op, world, options_.dtype);
    m.reduced = true;
  }
  grad.values = m.result;
  if (options_.collective == NcclCollective::reduce_scatter) keep_shard(grad.values, view_.size(), me);
}
}  // namespace aggsim
