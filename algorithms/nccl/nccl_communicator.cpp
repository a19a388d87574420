#include "algorithms/nccl/nccl_communicator.hpp"

#include "sim/comm/receiver_latency.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>
#include <tuple>

#include "algorithms/nccl/nccl_algorithm.hpp"
#include "algorithms/nccl/nccl_meeting.hpp"
#include "algorithms/nccl/nccl_op.hpp"
#include "sim/core/units.hpp"

XBT_LOG_NEW_DEFAULT_CATEGORY(aggsim_nccl, "aggsim's NCCL model");

namespace aggsim {

namespace {

// The communicator's channels: the init line's count or NCCL's own, within NCCL_MIN_NCHANNELS and
// NCCL_MAX_NCHANNELS.
int bounded_channels(const NcclOptions& o, int default_channels) {
  int channels = o.comm_channels.value_or(default_channels);
  if (o.min_channels) channels = std::max(channels, *o.min_channels);
  if (o.max_channels) channels = std::min(channels, *o.max_channels);
  return channels;
}

// What NCCL's choice sees: each algorithm's rule for the communicator's collective and op applied.
NcclSystem system_for_calls(NcclSystem system, const NcclOptions& options) {
  for (const NcclAlgorithmRow& row : nccl_algorithm_rows())
    if (row.system_for_calls) system = row.system_for_calls(system, options);
  return system;
}

}  // namespace

NcclCommunicator::NcclCommunicator(const std::vector<int>& members, const std::vector<sg4::Host*>& hosts,
                                   NcclOptions options, ProtocolCosts costs, BandwidthFactor bandwidth_factor)
    : view_(members, hosts),
      options_(options),
      costs_(costs),
      bandwidth_factor_(std::move(bandwidth_factor)),
      channels_(options.channels.value_or(bounded_channels(options, view_.default_channels(options.arch)))),
      tuning_(system_for_calls(view_.system(channels_, options.arch), options)),
      calls_made_(members.size(), 0) {
  for (const NcclAlgorithmRow& row : nccl_algorithm_rows())
    if (row.costs_for_calls) row.costs_for_calls(costs_, tuning_.system(), view_, options_);
  // Blackwell's nodes carry the same ConnectX-7 NICs and NCCL transport (kHopperNetworkChannelGBps).
  if (options.arch == GpuArch::hopper || options.arch == GpuArch::blackwell)
    network_channel_rate_ = kHopperNetworkChannelGBps * 1e9;
}

double NcclCommunicator::channel_rate(int from, int to) const {
  return view_.hop_class(from, to) == LinkClass::network ? network_channel_rate_ : 0;
}

double NcclCommunicator::channel_pace_time(const FlowPlan& m, const Geometry& g) const {
  if (network_channel_rate_ <= 0) return 0;
  // Bytes each channel sends at its rate: its sends that share it together (nccl_send_group), any
  // other network stream on its own.
  std::map<std::tuple<int, int, int>, double> sent;  // by (member, channel, group or 2 + stream)
  for (std::size_t i = 0; i < m.streams.size(); ++i) {
    const auto& st = m.streams[i];
    const int group = nccl_send_group(g, st.channel, st.from, st.to);
    const auto bytes = static_cast<double>(st.wire_bytes);
    if (group >= 0)
      sent[{st.from, st.channel, group}] += bytes;
    else if (view_.hop_class(st.from, st.to) == LinkClass::network)
      sent[{st.from, st.channel, 2 + static_cast<int>(i)}] += bytes;
  }
  double pace = 0;
  for (const auto& [key, bytes] : sent) pace = std::max(pace, bytes / network_channel_rate_);
  return pace;
}

NcclCommunicator::~NcclCommunicator() = default;

double NcclCommunicator::rate_factor(LinkClass cls, double bytes) const {
  return nccl_rate_factor(bandwidth_factor_, cls, bytes);
}

NcclCallPlan NcclCommunicator::plan(std::uint64_t wire_elements) const {
  NcclCallPlan plan;
  plan.data_bytes = static_cast<double>(wire_elements) * 4;
  plan.choice = tuning_.choose(options_.collective, plan.data_bytes, options_.algorithm, options_.protocol,
                               options_.channels);
  const int c = plan.choice.channels;
  plan.chunking =
      nccl_chunking(tuning_.system(), plan.choice.algorithm, plan.choice.protocol, plan.data_bytes, c);
  const NcclAlgorithmModel& model = algorithm(plan.choice.algorithm);
  plan.chunking.chunk_bytes = model.chunk_bytes(plan);
  const double loops = model.loops(plan);
  plan.loops = static_cast<int>(std::clamp(loops, 1.0, static_cast<double>(kNcclMaxLoops) + 1));
  return plan;
}

std::string NcclCommunicator::size_refusal(std::uint64_t wire_elements) const {
  const NcclCallPlan p = plan(wire_elements);
  if (p.loops <= kNcclMaxLoops) return "";
  return fmt::format(
      "{}: a call of that size takes more than {} of NCCL's loops ({} {} on {} channels, pieces of {:.0f} "
      "B), and aggsim visits every loop of every channel",
      units::format_bytes(p.data_bytes), kNcclMaxLoops, nccl_algorithm_name(p.choice.algorithm),
      protocol_name(p.choice.protocol), p.choice.channels, p.chunking.chunk_bytes);
}

NcclCommunicator::Meeting& NcclCommunicator::join(int me) {
  const std::uint64_t id = calls_made_[static_cast<std::size_t>(me)]++;
  auto& slot = meetings_[id];
  if (!slot) {
    slot = std::make_unique<Meeting>();
    slot->barrier = sg4::Barrier::create(static_cast<unsigned>(view_.size()));
    slot->inputs.assign(static_cast<std::size_t>(view_.size()), nullptr);
  }
  return *slot;
}

void NcclCommunicator::leave(std::uint64_t id) {
  auto it = meetings_.find(id);
  if (it != meetings_.end() && ++it->second->left == view_.size()) meetings_.erase(it);
}

// Made at first use: a communicator builds only the algorithms its calls run.
const NcclAlgorithmModel& NcclCommunicator::algorithm(NcclAlgorithm a) const {
  auto& slot = algorithms_[a];
  if (!slot) slot = nccl_algorithm_row(a).make(NcclContext{view_, options_, costs_, bandwidth_factor_});
  return *slot;
}

const NcclCommunicator::Geometry& NcclCommunicator::geometry(NcclAlgorithm a, int channels) {
  auto& slot = geometries_[{static_cast<int>(a), channels}];
  if (slot) return *slot;
  slot = std::make_unique<Geometry>();
  NcclGeometryBuilder builder(*slot, view_, network_channel_rate_);
  algorithm(a).build(builder, channels);
  builder.finish();
  return *slot;
}

void NcclCommunicator::run(Comm& comm, int me, Gradient& grad, const ReduceOp& op, int world,
                           CollectiveChoice* choice) {
  const NcclCallPlan plan = this->plan(grad.wire_elements);
  if (choice) {
    choice->nccl_algorithm = nccl_algorithm_name(plan.choice.algorithm);
    choice->protocol = protocol_name(plan.choice.protocol);
    choice->channels = plan.choice.channels;
  }
  const std::uint64_t id = calls_made_[static_cast<std::size_t>(me)];
  if (me == 0)
    ++calls_[fmt::format("{}/{}", nccl_algorithm_name(plan.choice.algorithm),
                         protocol_name(plan.choice.protocol))];
  if (view_.size() == 1) {
    // One rank: NCCL copies; the op still applies to the one input.
    if (grad.values.size() > 0 && options_.collective != NcclCollective::all_gather)
      NcclOp(op, world, options_.dtype).load(grad.values, Eigen::VectorXf(grad.values));
    else if (grad.values.size() > 0)
      round_to(grad.values, options_.dtype);
    return;
  }
  Meeting& m = join(me);
  m.inputs[static_cast<std::size_t>(me)] = &grad;
  if (options_.movement == Movement::chunk) {
    run_chunks(comm, me, grad, plan, op, world);
  } else if (moves_piecewise(plan) && receiver_latency::available()) {
    // Its pieces' posts interleave by timing, which a replayed step would not repeat.
    if (comm.replaying()) throw std::logic_error("a step with a call moved piece by piece was replayed");
    comm.refuse_replay();
    // As a call of streams, it runs from the last member's arrival (run_flow's meeting).
    m.barrier->wait();
    // Its pieces charge their route latency where they arrive (arrival_delay), as at chunk level.
    comm.charge_latency_at_receiver(true);
    run_chunks(comm, me, grad, plan, op, world);
    comm.charge_latency_at_receiver(false);
  } else {
    run_flow(comm, me, grad, m, plan, op, world);
  }
  leave(id);
}

bool NcclCommunicator::piecewise_within_lanes(int channels) const {
  const double lanes = static_cast<double>(view_.size()) * channels;
  return options_.movement == Movement::flow && options_.piecewise_few_pieces && lanes <= kNcclPiecewiseLanes;
}

bool NcclCommunicator::moves_piecewise(const NcclCallPlan& plan) const {
  const NcclAlgorithmModel& model = algorithm(plan.choice.algorithm);
  return piecewise_within_lanes(plan.choice.channels) && model.flow_moves_piecewise(plan) &&
         model.chunk_messages(plan) <= kNcclPiecewiseMessages;
}

bool NcclCommunicator::may_move_piecewise() const {
  return piecewise_within_lanes(std::max(channels(), options_.channels.value_or(1)));
}

Eigen::VectorXf nccl_reduce(const NcclView& view, const NcclCallPlan& plan,
                            const std::vector<const Eigen::VectorXf*>& inputs, const ReduceOp& reduce_op,
                            int world, WireDtype dtype) {
  return nccl_algorithm_row(plan.choice.algorithm).reduce(view, plan, inputs, NcclOp(reduce_op, world, dtype));
}

}  // namespace aggsim
