// NCCL's all-reduce as it runs (NCCL 2.21.5): per call NCCL's own choice of algorithm (ring, tree,
// NVLS inside a node, NVLS-Tree across nodes), protocol (LL, LL128, Simple) and channel count, or
// the ones the scenario forces (as NCCL_ALGO / NCCL_PROTO would); each channel's data pipelined
// around its ring or up and down its tree, moved at flow level (the default) or piece by piece
// (movement: chunk), and reduced in NCCL's order with NCCL's op semantics. The model and what it
// promises: algorithms/nccl/README.md.
#include <fmt/format.h>

#include <xbt/config.hpp>

#include <memory>
#include <string>

#include "algorithms/nccl/calibration/nccl_calibration.hpp"
#include "algorithms/nccl/nccl_communicator.hpp"
#include "algorithms/nccl/nccl_setup.hpp"
#include "algorithms/nccl/nvls_shards.hpp"
#include "algorithms/nccl/pat_schedule.hpp"
#include "algorithms/registry.hpp"
#include "sim/platform/host_facts.hpp"

namespace aggsim {

namespace {

class NcclAllreduce final : public Aggregator {
 public:
  NcclAllreduce(std::shared_ptr<NcclCommunicator> comm, ReduceOp op) : comm_(std::move(comm)), op_(op) {}
  void aggregate(RankContext& ctx, Gradient& grad) override {
    comm_->run(*ctx.comm, ctx.rank, grad, op_, ctx.world, ctx.choice);
  }

 private:
  std::shared_ptr<NcclCommunicator> comm_;
  ReduceOp op_;
};

}  // namespace

NcclOptions nccl_options(const Params& params) {
  NcclOptions o;
  o.algorithm = nccl_algorithm_named(params.text("nccl_algorithm"));
  o.protocol = protocol_named(params.text("protocol"));
  const auto channel_count = [&](const std::string& key) -> std::optional<int> {
    const std::string text = params.text(key);
    if (text == "auto") return std::nullopt;
    std::size_t used = 0;
    long value = 0;
    try {
      value = std::stol(text, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != text.size() || value < 1)
      throw ParamError(key, fmt::format("'{}' is neither auto nor a whole number of channels from 1", text));
    if (value > kNcclMaxChannels)
      throw ParamError(key, fmt::format("{} is more than the {} channels NCCL 2.21.5 opens (MAXCHANNELS)",
                                        value, kNcclMaxChannels));
    return static_cast<int>(value);
  };
  o.channels = channel_count("channels");
  o.comm_channels = channel_count("comm_channels");
  o.min_channels = channel_count("min_channels");
  o.max_channels = channel_count("max_channels");
  if (o.min_channels && o.max_channels && *o.min_channels > *o.max_channels)
    throw ParamError("min_channels",
                     fmt::format("{} is more than max_channels ({})", *o.min_channels, *o.max_channels));
  const std::string collective = params.text("collective");
  for (NcclCollective c : {NcclCollective::all_reduce, NcclCollective::all_gather,
                           NcclCollective::reduce_scatter, NcclCollective::broadcast})
    if (collective == nccl_collective_name(c)) o.collective = c;
  o.movement = params.text("movement") == "chunk" ? Movement::chunk : Movement::flow;
  o.reuse_flow_plans = params.text("flow_plans") == "reuse";
  o.piecewise_few_pieces = o.movement == Movement::flow && params.text("few_pieces") == "chunk";
  // Empty: the platform's GPU, read once the platform is built (platform_arch).
  if (params.has("gpu") && !params.text("gpu").empty()) o.arch = kGpuNames.parse(params.text("gpu"), "gpu");
  const bool nvls_family = o.algorithm && is_nvls(*o.algorithm);
  o.nvls_enabled = !(params.has("nvls") && params.text("nvls") == "off");
  if (nvls_family && !o.nvls_enabled)
    throw ParamError("nvls", fmt::format("off: NCCL_NVLS_ENABLE=0 turns NVLS off, and nccl_algorithm forces {}",
                                         nccl_algorithm_name(*o.algorithm)));
  if (o.algorithm && o.protocol && !nccl_protocol_runs(*o.algorithm, *o.protocol))
    throw ParamError("protocol", fmt::format("{}: NCCL runs {} with the simple protocol only",
                                             protocol_name(*o.protocol), nccl_algorithm_name(*o.algorithm)));
  if (nvls_family && o.movement == Movement::chunk)
    throw ParamError("movement",
                     fmt::format("chunk: the piece-by-piece reference runs ring and tree; {} moves "
                                 "at flow level only",
                                 nccl_algorithm_name(*o.algorithm)));
  // Reduce-scatter and all-gather run NCCL's ring, PAT or, inside one node, NVLS; broadcast its ring.
  if (o.algorithm == NcclAlgorithm::pat && o.collective != NcclCollective::reduce_scatter &&
      o.collective != NcclCollective::all_gather)
    throw ParamError("nccl_algorithm", fmt::format("pat: NCCL runs PAT for reduce_scatter and all_gather only, and "
                                                   "the collective is {}",
                                                   nccl_collective_name(o.collective)));
  if (o.collective != NcclCollective::all_reduce) {
    if (o.movement == Movement::chunk && o.collective == NcclCollective::broadcast)
      throw ParamError("movement", "chunk: the piece-by-piece reference runs all_reduce, reduce_scatter and "
                                   "all_gather; broadcast moves at flow level only");
    const bool gathering = o.collective != NcclCollective::broadcast;
    if (o.algorithm && *o.algorithm != NcclAlgorithm::ring &&
        !(gathering && (*o.algorithm == NcclAlgorithm::nvls || *o.algorithm == NcclAlgorithm::pat)))
      throw ParamError("nccl_algorithm",
                       fmt::format("{}: NCCL runs {} by {}", nccl_algorithm_name(*o.algorithm),
                                   nccl_collective_name(o.collective),
                                   gathering ? "ring, pat (one GPU per node) or, inside one node, nvls" : "ring"));
    if (!gathering) o.algorithm = NcclAlgorithm::ring;
  }
  return o;
}

// The GPU generation the ranks' hosts declare (platform.gpu, host property aggsim_gpu); Hopper when
// they declare none. Ranks on GPUs of different generations are refused: NCCL tunes for one.
bool nccl_streams_merge(bool calibration_factors, bool one_group) {
  namespace cfg = simgrid::config;
  return !calibration_factors && one_group && cfg::get_value<std::string>("network/model") == "CM02" &&
         !cfg::get_value<bool>("network/crosstraffic") && cfg::get_value<double>("network/TCP-gamma") >= 1e15 &&
         cfg::is_default("network/bandwidth-factor");
}

GpuArch platform_arch(const std::vector<sg4::Host*>& hosts) {
  std::optional<GpuArch> arch;
  for (const sg4::Host* h : hosts) {
    const std::optional<GpuGeneration> gpu = host_facts(h).gpu;
    if (!gpu) continue;
    if (arch && *arch != *gpu)
      throw ParamError("gpu", fmt::format("the ranks' hosts declare GPUs of two generations ({} and {}); "
                                          "NCCL's tuning follows one: set algorithm.gpu",
                                          kGpuNames.name(*arch), kGpuNames.name(*gpu)));
    arch = gpu;
  }
  return arch.value_or(GpuArch::hopper);
}

// A forced algorithm that cannot run the call's op: NVLS (and NVLS-Tree) reduce fp32 by sum only, PAT's
// reduce-scatter runs no pre-multiplied op (avg).
void check_forced_op(const NcclOptions& o, const ReduceOp& op) {
  const bool reduces = o.collective == NcclCollective::reduce_scatter || o.collective == NcclCollective::all_reduce;
  if (reduces && o.algorithm && is_nvls(*o.algorithm) && !o.nvls_reduces_op)
    throw ParamError("nccl_algorithm", fmt::format("{}: NCCL's switch reduces fp32 by sum only, and op is {} "
                                                   "(set op: sum, or leave nccl_algorithm to NCCL)",
                                                   nccl_algorithm_name(*o.algorithm), reduce_kind_name(op.kind)));
  if (o.collective == NcclCollective::reduce_scatter && o.algorithm == NcclAlgorithm::pat && !o.pat_reduces_op)
    throw ParamError("nccl_algorithm",
                     fmt::format("pat: NCCL 2.23.4 runs PAT's reduce-scatter for sum, min and max, not for {} "
                                 "(NCCL pre-multiplies it); set op: sum, or leave nccl_algorithm to NCCL",
                                 reduce_kind_name(op.kind)));
}

// Checks what needs the platform: whether the nodes can run a forced algorithm.
void check_nccl_platform(const NcclOptions& o, const NcclView& view) {
  const NvlsHardware hardware{view.nvswitch(), nccl_gpu_multicast(o.arch), view.smallest_node()};
  if (o.algorithm == NcclAlgorithm::pat) {
    if (!pat_placement_runs(view.size(), view.nodes()))
      throw ParamError("nccl_algorithm",
                       fmt::format("pat runs with one GPU per node (NCCL 2.23.4 enables it only where every rank "
                                   "has a node of its own), and a node here has {}",
                                   view.largest_node()));
    if (o.arch == GpuArch::cdna3)
      throw ParamError("nccl_algorithm", "pat: RCCL 2.21.5, which cdna3 GPUs follow, has no PAT");
    return;
  }
  if (!o.algorithm) {
    if (o.movement == Movement::chunk &&
        nccl_placement(NcclAlgorithm::nvls, 1, hardware) == NcclPlacement::runs)
      throw ParamError("movement",
                       "chunk: these nodes' GPUs sit on a switch that reduces, where NCCL may choose "
                       "NVLS, which moves at flow level only: force nccl_algorithm ring or tree");
    return;
  }
  const std::string name = nccl_algorithm_name(*o.algorithm);
  switch (nccl_placement(*o.algorithm, view.nodes(), hardware)) {
    case NcclPlacement::runs:
      return;
    case NcclPlacement::needs_switch:
      throw ParamError(
          "nccl_algorithm",
          fmt::format("{} needs nodes of several GPUs on a switch that reduces (platform.nvswitch: "
                      "true on a generated platform, host property aggsim_nvswitch=\"true\" in XML)",
                      name));
    case NcclPlacement::needs_nvls_gpu:
      throw ParamError(
          "nccl_algorithm",
          fmt::format("{} needs GPUs whose switch reduces their memory (NVLS: gpu: hopper or "
                      "blackwell); {} GPUs have none, and {} never runs {} there",
                      name, kGpuNames.name(o.arch), o.arch == GpuArch::cdna3 ? "RCCL" : "NCCL", name));
    case NcclPlacement::needs_three_gpus:
      throw ParamError("nccl_algorithm",
                       fmt::format("{} runs on nodes of more than 2 GPUs (NCCL 2.21.5 turns NVLS off "
                                   "below), and a node here has {}",
                                   name, view.smallest_node()));
    case NcclPlacement::nvls_spans_nodes:
      throw ParamError("nccl_algorithm",
                       fmt::format("nvls reduces inside one node, and these ranks span {} nodes: "
                                   "use nvls_tree (NVLS inside nodes, a tree between them)",
                                   view.nodes()));
    case NcclPlacement::nvls_tree_on_one_node:
      throw ParamError("nccl_algorithm", "nvls_tree joins nodes, and these ranks are on one node: use nvls");
  }
}

std::vector<ParamSpec> nccl_param_specs() {
  return {
      ParamSpec("nccl_algorithm", ParamKind::choice, "auto",
                "NCCL's algorithm (NCCL_ALGO): auto = NCCL's choice per call (2.21.5's; reduce_scatter and "
                "all_gather 2.23.4's, with pat at one GPU per node)")
          .one_of({"auto", "ring", "tree", "nvls", "nvls_tree", "pat"}),
      ParamSpec("protocol", ParamKind::choice, "auto",
                "NCCL's protocol (NCCL_PROTO): auto = NCCL's choice per call")
          .one_of({"auto", "ll", "ll128", "simple"}),
      ParamSpec(
          "channels", ParamKind::text, "auto",
          "channels (auto: two per NIC between nodes, fewer for small calls, as NCCL; or a number up to 32)"),
      ParamSpec("comm_channels", ParamKind::text, "auto",
                "the communicator's channels, as NCCL's init line 'N coll channels' reports them (auto: two "
                "per NIC between nodes; or a number up to 32); small calls still run on fewer"),
      ParamSpec("min_channels", ParamKind::text, "auto",
                "at least this many channels in the communicator, as NCCL_MIN_NCHANNELS / NCCL_MIN_CTAS "
                "(auto: no bound)"),
      ParamSpec("max_channels", ParamKind::text, "auto",
                "at most this many channels in the communicator, as NCCL_MAX_NCHANNELS / NCCL_MAX_CTAS "
                "(auto: no bound)"),
      ParamSpec("movement", ParamKind::choice, "flow",
                "flow: each channel edge one stream (fast); chunk: every piece a message (the reference, "
                "small runs)")
          .one_of({"flow", "chunk"}),
      ParamSpec("streams", ParamKind::choice, "auto",
                "movement flow: per_channel = one stream per channel edge (the reference); per_pair = one "
                "stream per pair of members carrying its channels' bytes, far fewer transfers at scale, the "
                "same times up to rounding where the network grants every stream its paced rate; auto = "
                "per_pair there (network alpha_beta, no calibration factors, one data-parallel group), "
                "else per_channel")
          .one_of({"auto", "per_channel", "per_pair"}),
      ParamSpec("flow_plans", ParamKind::choice, "reuse",
                "movement flow: reuse = calls of one size (a bucket every step) share the first one's "
                "streams and times, the same numbers bit for bit; per_call = each call works them out "
                "again (the reference)")
          .one_of({"reuse", "per_call"}),
      ParamSpec("few_pieces", ParamKind::choice, "chunk",
                "movement flow: chunk = a call of few pieces a channel (a tree's up to 50, PAT's up to 4 "
                "loops, a one-loop LL128 ring of 12+ channels; within 4,096 members x channels and 262,144 "
                "messages) moves piece by piece as movement chunk moves it, the same times; flow = by the "
                "flow model like every other call (algorithms/nccl/FLOW_MISSES.md)")
          .one_of({"chunk", "flow"}),
      ParamSpec("nvls", ParamKind::choice, "on",
                "NVLS (NCCL_NVLS_ENABLE): on = NCCL may run NVLS and NVLS-Tree where the switch reduces; off = "
                "neither, as NCCL_NVLS_ENABLE=0 (NCCL chooses among ring and tree)")
          .one_of({"on", "off"}),
      ParamSpec("gpu", ParamKind::choice, "",
                "GPU generation, for NCCL's per-channel caps, LL128 and NVLS (hopper, blackwell); cdna3 "
                "follows RCCL (default: the platform's platform.gpu, else hopper)")
          .one_of(kGpuNames.list()),
      ParamSpec(
          "collective", ParamKind::choice, "all_reduce",
          "the collective each call runs; the others with model.math: off, for aggsim perf, calibrate and "
          "compare (reduce_scatter and all_gather: NCCL's ring, PAT at one GPU per node, or NVLS inside one node)")
          .one_of({"all_reduce", "all_gather", "reduce_scatter", "broadcast"}),
  };
}

AlgorithmInfo nccl_allreduce_entry() {
  AlgorithmInfo info;
  info.name = "nccl_allreduce";
  info.messages_per_rank_step = [](int p) { return 2 * log2_rounds(p); };
  info.summary =
      "NCCL's all-reduce: ring / tree / NVLS / NVLS-Tree, LL / LL128 / Simple and channels chosen per call "
      "as "
      "NCCL does, pipelined at flow level, reduced in NCCL's order";
  info.params = nccl_param_specs();
  // Another collective runs NCCL's call of that name: ncclAllGather is nccl_allgather.
  info.call_identity = [](const Params& params) {
    const NcclCollective c = nccl_options(params).collective;
    const std::string name = nccl_collective_name(c);
    std::string call = "nccl_";
    for (char ch : name)
      if (ch != '_') call += ch;
    return CallIdentity{*collective_kind_named(name), call};
  };
  info.reduces_in_flight = true;
  info.consensus = true;
  info.calibration = nccl_calibration();
  info.prepare = [](const AlgorithmConfig& cfg) {
    const NcclOptions options = nccl_options(cfg.params);
    if (options.collective != NcclCollective::all_reduce && cfg.math)
      throw ParamError("collective", fmt::format("{} moves bytes only and leaves no all-reduce result: set "
                                                 "model.math: off",
                                                 nccl_collective_name(options.collective)));
    AlgorithmRun run;
    run.replay_refusal = options.movement == Movement::chunk
                             ? "movement: chunk interleaves its channels' pieces by timing"
                             : "";
    run.pieces_pay_latency = options.movement == Movement::chunk;
    if (!cfg.hosts()) {
      run.make_aggregator = []() -> std::unique_ptr<Aggregator> {
        throw std::logic_error("nccl_allreduce: aggregators are made once the platform is built");
      };
      return run;
    }
    std::vector<int> members(static_cast<std::size_t>(cfg.world));
    for (int r = 0; r < cfg.world; ++r) members[static_cast<std::size_t>(r)] = r;
    NcclOptions resolved = options;
    if (!cfg.params.has("gpu") || cfg.params.text("gpu").empty()) {
      const std::vector<sg4::Host*>& hosts = *cfg.hosts();
      resolved.arch =
          platform_arch({hosts.begin(), hosts.begin() + std::min<std::size_t>(hosts.size(), cfg.world)});
    }
    resolved.nvls_reduces_op = nccl_nvls_reduces(cfg.op);
    resolved.pat_reduces_op = pat_reduces(cfg.op);
    const std::string streams = cfg.params.text("streams");
    resolved.merge_unless_traced = streams == "auto";
    resolved.merge_streams = streams == "per_pair" ||
                             (streams == "auto" && nccl_streams_merge(static_cast<bool>(cfg.bandwidth_factor()),
                                                                      cfg.hosts()->size() == members.size()));
    auto comm = std::make_shared<NcclCommunicator>(members, *cfg.hosts(), resolved,
                                                   protocol_costs_of(cfg.calibration), cfg.bandwidth_factor());
    check_nccl_platform(resolved, comm->view());
    check_forced_op(resolved, cfg.op);
    if (const std::string why = comm->size_refusal((cfg.model_bytes + 3) / 4); !why.empty())
      throw ParamError("model.size", why);
    // Chunk by chunk, each channel of a rank runs up to 5 actors (a tree's up and down halves and
    // their senders to the parent and two children; a ring's channel and its sender: 2).
    // A flow-level call of few pieces a channel moves piece by piece too (moves_piecewise), its
    // pieces latency-free in the network.
    run.some_pieces_pay_latency = comm->may_move_piecewise();
    if (options.movement == Movement::chunk || run.some_pieces_pay_latency) {
      run.extra_actors =
          static_cast<std::int64_t>(cfg.world) * std::max(comm->channels(), options.channels.value_or(1)) * 5;
      run.extra_actors_what = "channels (a call moved piece by piece runs up to 5 actors per channel and rank)";
    }
    const ReduceOp op = cfg.op;
    run.make_aggregator = [comm, op] { return std::make_unique<NcclAllreduce>(comm, op); };
    run.summary_fields = [comm] {
      std::vector<SummaryField> fields = {{"nccl_channels", static_cast<double>(comm->channels())}};
      for (const auto& [pair, count] : comm->calls())
        fields.push_back(
            {"nccl_calls_" + pair.substr(0, pair.find('/')) + "_" + pair.substr(pair.find('/') + 1),
             static_cast<double>(count)});
      return fields;
    };
    return run;
  };
  return info;
}

}  // namespace aggsim
