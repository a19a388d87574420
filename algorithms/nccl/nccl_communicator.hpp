#pragma once
// One NCCL communicator shared by the ranks of a run (or of a group, such as the inter-node
// stage of a hierarchical all-reduce): what NCCL sees of the platform (NcclView), NCCL's choice of
// algorithm, protocol and channels per call (NcclTuning), and each call's movement and math.
//
// Schedule and movement (DESIGN, "Collectives as schedule + movement"): the schedule (which member
// sends which piece to whom, and in which order pieces are reduced) drives the math, so every
// member ends with the reduction NCCL computes, in NCCL's order; the movement is either
//  - flow level (the default): each channel edge one stream of all the bytes it carries, started at
//    once and shared max-min with all other traffic by SimGrid, and the call ends when the streams
//    have ended (plus the last hop's latency) or when the pipeline's dependency chain allows,
//    whichever is later, after the protocol's base latency; or
//  - chunk level (movement: chunk, the reference): every piece one message, at most NCCL's slots
//    in flight per connection, each receive usable a hop latency after it arrives.
// tests/algorithms/test_nccl_movement.cpp bounds the difference between the two.
//
// Op semantics are NCCL's: avg multiplies each input by float(1 / n) as it is read and sums (no
// division at the end); custom_avg likewise by float(1 / denominator).
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <simgrid/s4u.hpp>
#include <vector>

#include "algorithms/nccl/nccl_op.hpp"
#include "algorithms/nccl/nccl_tuning.hpp"
#include "algorithms/nccl/nccl_view.hpp"
#include "algorithms/nccl/protocol.hpp"
#include "sim/api/aggregator.hpp"
#include "sim/api/collective_call.hpp"
#include "sim/api/reduce_op.hpp"

namespace aggsim {

enum class Movement { flow, chunk };

struct NcclGeometry;  // nccl_algorithm.hpp
class NcclAlgorithmModel;
enum class NcclCombine;
struct NcclChain;

struct NcclOptions {
  std::optional<NcclAlgorithm> algorithm;  // forced (NCCL_ALGO); empty: NCCL's choice
  std::optional<Protocol> protocol;        // forced (NCCL_PROTO)
  std::optional<int> channels;             // forced; empty: NCCL's (fewer for small calls)
  std::optional<int> comm_channels;        // the communicator's (NCCL's init line); empty: NCCL's
  std::optional<int> min_channels;         // bounds on the communicator's (NCCL_MIN_NCHANNELS,
  std::optional<int> max_channels;         // NCCL_MAX_NCHANNELS); empty: none
  NcclCollective collective = NcclCollective::all_reduce;
  // Whether NVLS reduces the call's op and type (nccl_nvls_reduces); NCCL's choice runs an all-reduce
  // or a reduce-scatter by NVLS (or NVLS-Tree) only when it does.
  bool nvls_reduces_op = true;
  // NCCL_NVLS_ENABLE (algorithm.nvls): off, NCCL runs neither NVLS nor NVLS-Tree and chooses among the rest.
  bool nvls_enabled = true;
  // Whether PAT's reduce-scatter runs the call's op (pat_reduces): not avg, which NCCL pre-multiplies.
  bool pat_reduces_op = true;
  WireDtype dtype = WireDtype::fp32;  // the buffers' element type (nccl_op.hpp): what is sent and reduced
  Movement movement = Movement::flow;
  GpuArch arch = GpuArch::hopper;
  // Flow level: one stream per pair of members instead of one per channel edge (`streams: per_pair`;
  // `auto` resolves it with nccl_streams_merge, where the network grants every stream its paced rate).
  bool merge_streams = false;
  bool merge_unless_traced = false;  // `auto`: a traced run shows each channel's stream
  // Flow level: calls of one size reuse the first one's streams and times (`flow_plans: reuse`)
  // instead of working them out again (`flow_plans: per_call`, the reference); the same numbers.
  bool reuse_flow_plans = true;
  // Flow level: a call of few pieces a channel moves piece by piece (moves_piecewise), where the
  // algorithm says so (NcclAlgorithmModel::flow_moves_piecewise; `few_pieces: chunk`).
  bool piecewise_few_pieces = false;
};

// What a call does, the same on every member.
struct NcclCallPlan {
  NcclChoice choice;
  NcclChunking chunking;
  double data_bytes = 0;  // the call's buffer (nccl-tests' size)
  int loops = 1;          // NCCL's loops: pieces of channels x members x chunk bytes
};

// The loops a call may take: both movements visit every loop of every channel, so a call needing
// more (a size far beyond any GPU's memory) is refused where its size is known (size_refusal); plan()
// counts at most kNcclMaxLoops + 1.
constexpr int kNcclMaxLoops = 1 << 20;

// A flow-level call moves piece by piece (NcclCommunicator::moves_piecewise) only within these:
// members x channels (up to 5 actors each) and 262,144 messages (the algorithm's chunk_messages), so
// the piecewise path stays as cheap as a small chunk-level run at any scale.
constexpr double kNcclPiecewiseLanes = 4096;
constexpr double kNcclPiecewiseMessages = 1 << 18;

class NcclCommunicator {
 public:
  // `members`: the communicator's ranks in order; `hosts`: every rank's host.
  // `bandwidth_factor`: what the network applies to each transfer's bandwidth (a calibration's
  // factors), at which the flow level paces its streams.
  NcclCommunicator(const std::vector<int>& members, const std::vector<sg4::Host*>& hosts, NcclOptions options,
                   ProtocolCosts costs, BandwidthFactor bandwidth_factor = {});
  ~NcclCommunicator();

  const NcclView& view() const { return view_; }
  const NcclOptions& options() const { return options_; }
  int channels() const { return channels_; }
  NcclCallPlan plan(std::uint64_t wire_elements) const;
  // Why a call of `wire_elements` cannot be simulated (more than kNcclMaxLoops loops), or "".
  std::string size_refusal(std::uint64_t wire_elements) const;

  // Member `me`'s part of one call: `grad` holds its input and ends with the result: all_reduce the
  // whole reduction; reduce_scatter the member's shard of it (nccl_shard; the rest zero);
  // all_gather every member's shard of its own input (broadcast moves bytes only). `world` is
  // avg's divisor. `choice` (may be null)
  // receives the call's algorithm, protocol and channels.
  void run(Comm& comm, int me, Gradient& grad, const ReduceOp& op, int world, CollectiveChoice* choice);

  // Whether a flow-level call of this plan moves piece by piece, as at chunk level: at most the
  // algorithm's flow_moves_piecewise, within kNcclPiecewiseLanes and kNcclPiecewiseMessages (the
  // options' piecewise_few_pieces on). Such a call's step is never replayed.
  bool moves_piecewise(const NcclCallPlan& plan) const;
  // Whether any call of this communicator may (the actors it may need).
  bool may_move_piecewise() const;

  // Calls made so far per algorithm x protocol (summary.json), counted once per call.
  const std::map<std::string, int>& calls() const { return calls_; }

 private:
  struct Meeting;   // nccl_meeting.hpp
  struct FlowPlan;  // nccl_meeting.hpp
  using Geometry = NcclGeometry;
  using Combine = NcclCombine;
  using Chain = NcclChain;
  Meeting& join(int me);
  void leave(std::uint64_t id);
  // Algorithm `a`'s model on this communicator (its row of nccl_algorithms.cpp), made at first use.
  const NcclAlgorithmModel& algorithm(NcclAlgorithm a) const;
  const Geometry& geometry(NcclAlgorithm a, int channels);
  // Flow level (nccl_flow_engine.cpp).
  void run_flow(Comm& comm, int me, Gradient& grad, Meeting& m, const NcclCallPlan& plan, const ReduceOp& op,
                int world);
  // The flow plan of a call of `wire_elements` (made once per size with reuse_flow_plans).
  std::shared_ptr<const FlowPlan> flow_plan(const NcclCallPlan& plan, NcclAlgorithm a, int channels,
                                            std::uint64_t wire_elements, bool traced);
  void plan_streams(FlowPlan& f, const NcclCallPlan& plan, const Geometry& g, std::uint64_t wire_elements,
                    bool traced) const;
  void merge_streams(FlowPlan& f) const;
  // Chunk level (nccl_chunk_engine.cpp): the algorithm's schedule (NcclAlgorithmModel::start_chunks).
  void run_chunks(Comm& comm, int me, Gradient& grad, const NcclCallPlan& plan, const ReduceOp& op,
                  int world);
  // The network's bandwidth factor for `bytes` over a hop of class `cls`.
  double rate_factor(LinkClass cls, double bytes) const;
  // What one channel can move from member `from` to `to` (bytes/s): across the network its GPU's
  // per-channel rate (kHopperNetworkChannelGBps), else no bound of its own (0).
  double channel_rate(int from, int to) const;
  // The longest any member takes to send what one channel sends of `m` at channel_rate: its
  // network streams, and the sends that share its rate (nccl_send_group).
  double channel_pace_time(const FlowPlan& m, const Geometry& g) const;
  // Flow level with `few_pieces: chunk`, and `channels` channels on every member within
  // kNcclPiecewiseLanes: what moves_piecewise and may_move_piecewise both need.
  bool piecewise_within_lanes(int channels) const;

  NcclView view_;
  NcclOptions options_;
  ProtocolCosts costs_;
  BandwidthFactor bandwidth_factor_;
  int channels_ = 1;
  NcclTuning tuning_;
  double network_channel_rate_ = 0;        // bytes/s per channel and network connection, 0: none
  std::vector<std::uint64_t> calls_made_;  // per member
  std::map<std::uint64_t, std::unique_ptr<Meeting>> meetings_;
  mutable std::map<NcclAlgorithm, std::unique_ptr<NcclAlgorithmModel>> algorithms_;
  std::map<std::pair<int, int>, std::unique_ptr<Geometry>> geometries_;  // by algorithm, channels
  std::map<std::string, int> calls_;
  std::map<std::pair<std::uint64_t, bool>, std::shared_ptr<const FlowPlan>> flow_plans_;  // by size, traced
};

// The result of one all-reduce in NCCL's order, from every member's input (flow level's math,
// which the chunk level's messages reproduce bit for bit). `inputs[m]` is member m's vector.
Eigen::VectorXf nccl_reduce(const NcclView& view, const NcclCallPlan& plan,
                            const std::vector<const Eigen::VectorXf*>& inputs, const ReduceOp& op, int world,
                            WireDtype dtype = WireDtype::fp32);

}  // namespace aggsim
