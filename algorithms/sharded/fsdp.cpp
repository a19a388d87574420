// Sharded data parallelism as PyTorch FSDP and ZeRO run it, over ring collectives. The model is cut
// into units (consecutive layers, the step plan's buckets); every rank keeps 1/n of each unit's
// parameters and gradients. A unit's gradients are reduce-scattered as soon as its backward pass
// ends, each rank updates its own shard, and a unit's parameters are all-gathered where the
// schedule needs them whole:
//   full      (FULL_SHARD, ZeRO-3)  before each unit's forward and again before its backward;
//   grad_op   (SHARD_GRAD_OP, ZeRO-2) before each unit's forward only;
//   hybrid    (HYBRID_SHARD, HSDP)  `full` inside groups of shard_group consecutive ranks, each
//             reduce-scattered shard then all-reduced across the groups (ranks of equal index);
//   optimizer (ZeRO-1)  after the optimizer step.
// The ring's order is the ring all-reduce's (ring_reduce_scatter / ring_allgather): a reduce-scatter
// plus a gather of the updated shards gives the ranks the bits ring_allreduce gives them with the
// same units as buckets. Assumes a commutative, associative op (as NCCL's).
#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <mutex>

#include "algorithms/collectives/allreduce.hpp"
#include "algorithms/collectives/ring.hpp"
#include "algorithms/nccl/nccl_tuning.hpp"
#include "algorithms/registry.hpp"
#include "algorithms/sharded/fsdp_memory.hpp"
#include "algorithms/sharded/fsdp_nccl.hpp"

namespace aggsim {

namespace {

std::uint64_t dtype_bytes(const std::string& dtype) {
  return dtype == "fp32" ? 4 : 2;
}

// Which ranks share shards: groups of `group_size` consecutive ranks (the world unless hybrid).
struct ShardLayout {
  FsdpSharding sharding = FsdpSharding::full;
  int world = 1;
  int group_size = 1;
  std::uint64_t param_bytes = 4, reduce_bytes = 4;  // per element on the wire

  int groups() const { return world / group_size; }
  Group shard_group(int rank) const {
    return Group::strided(rank / group_size * group_size, 1, group_size, rank % group_size);
  }
  // The ranks holding the same shard in every group (hybrid's all-reduce of the shard).
  Group replica_group(int rank) const {
    return Group::strided(rank % group_size, group_size, groups(), rank / group_size);
  }
};

// The units' sizes as the first rank saw them (for summary.json's per-rank bytes).
struct ObservedUnits {
  std::mutex lock;
  std::vector<std::uint64_t> elements;  // by bucket (backward order), fp32 elements
};

class Fsdp final : public Aggregator {
 public:
  // `nccl`: the rank's NCCL collectives (collectives: nccl), or null for the message-level ring.
  Fsdp(ReduceOp op, ShardLayout layout, std::shared_ptr<ObservedUnits> observed, std::unique_ptr<Aggregator> nccl)
      : op_(op), layout_(layout), observed_(std::move(observed)), nccl_(std::move(nccl)) {}

  // Reduce-scatter inside the shard group (then hybrid's all-reduce of the shard across groups);
  // the rank keeps its reduced shard and zeroes the rest, which it does not own.
  void aggregate(RankContext& ctx, Gradient& grad) override {
    note_unit(ctx, grad);
    if (nccl_) return nccl_->aggregate(ctx, grad);
    const Group group = layout_.shard_group(ctx.rank);
    ring_reduce_scatter(*ctx.comm, group, grad, op_, layout_.reduce_bytes);
    const ChunkView owned = chunk_of(grad, group.size(), ring_owned_chunk(group.me, group.size()));
    auto shard_values = grad.values.segment(owned.proxy.begin, owned.proxy.count);
    if (layout_.groups() > 1) {
      Gradient shard = flat_gradient(shard_values, static_cast<std::uint64_t>(owned.wire.count));
      const Group replicas = layout_.replica_group(ctx.rank);
      ring_reduce_scatter(*ctx.comm, replicas, shard, op_, layout_.reduce_bytes);
      const ChunkView mine = chunk_of(shard, replicas.size(), ring_owned_chunk(replicas.me, replicas.size()));
      op_.finalize(shard.values.segment(mine.proxy.begin, mine.proxy.count), ctx.world);
      ring_allgather(*ctx.comm, replicas, shard, layout_.reduce_bytes);
      shard_values = shard.values;
    } else {
      op_.finalize(shard_values, ctx.world);
    }
    const Eigen::VectorXf kept = shard_values;
    grad.values.setZero();
    grad.values.segment(owned.proxy.begin, owned.proxy.count) = kept;
  }

  // Every rank contributes its own (updated) shard of the unit; the ring brings it the others'.
  void gather_parameters(RankContext& ctx, Gradient& params) override {
    if (nccl_) return nccl_->gather_parameters(ctx, params);
    ring_allgather(*ctx.comm, layout_.shard_group(ctx.rank), params, layout_.param_bytes);
  }

 private:
  void note_unit(const RankContext& ctx, const Gradient& grad) {
    // One rank's units: the first data-parallel group's first rank under a parallel layout.
    if (ctx.comm->global_rank(ctx.rank) != 0 || ctx.step != 0) return;
    std::lock_guard<std::mutex> guard(observed_->lock);
    observed_->elements.push_back(grad.wire_elements);
  }

  ReduceOp op_;
  ShardLayout layout_;
  std::shared_ptr<ObservedUnits> observed_;
  std::unique_ptr<Aggregator> nccl_;
};

FsdpSharding sharding_named(const std::string& name) {
  if (name == "grad_op") return FsdpSharding::grad_op;
  if (name == "hybrid") return FsdpSharding::hybrid;
  if (name == "optimizer") return FsdpSharding::optimizer;
  return FsdpSharding::full;
}

// The shard group's size: the world, or hybrid's shard_group (default: the ranks of a node).
int shard_group_size(const AlgorithmConfig& cfg, FsdpSharding sharding) {
  const std::int64_t asked = cfg.params.integer("shard_group");
  if (sharding != FsdpSharding::hybrid) {
    if (asked != 0 && asked != cfg.world)
      throw ParamError("shard_group", fmt::format("shard_group: {} groups ranks for sharding: hybrid only; "
                                                  "sharding: {} shards over all {} ranks (leave it out)",
                                                  asked, cfg.params.text("sharding"), cfg.world));
    return cfg.world;
  }
  std::int64_t g = asked;
  if (g == 0) {
    const RankLayout* layout = cfg.layout();
    if (!layout) return 1;  // the scenario is loading: checked again on the platform
    g = static_cast<std::int64_t>(
        std::count(layout->node_of_rank.begin(), layout->node_of_rank.end(), layout->node_of_rank.front()));
  }
  if (cfg.world % g != 0)
    throw ParamError("shard_group", fmt::format("shard_group: {} does not divide the {} ranks into equal groups{}",
                                                g, cfg.world, asked == 0 ? " (a node's GPUs, the default)" : ""));
  if (g == cfg.world)
    throw ParamError(asked == 0 ? "sharding" : "shard_group",
                     fmt::format("sharding: hybrid needs at least two groups, and shard_group {} holds all {} "
                                 "ranks (use sharding: full, or a smaller shard_group)",
                                 g, cfg.world));
  return static_cast<int>(g);
}

ParameterSharding schedule_of(FsdpSharding sharding, const Params& params) {
  ParameterSharding s;
  s.before_forward = sharding != FsdpSharding::optimizer;
  s.before_backward = sharding == FsdpSharding::full || sharding == FsdpSharding::hybrid;
  s.after_step = sharding == FsdpSharding::optimizer;
  s.prefetch = params.boolean("prefetch");
  s.unit_bytes = static_cast<std::uint64_t>(params.integer("unit"));
  return s;
}

std::vector<SummaryField> memory_fields(const ShardLayout& layout, const ParameterSharding& schedule,
                                        const ObservedUnits& observed) {
  FsdpMemoryInput in;
  in.sharding = layout.sharding;
  in.shard_group = layout.group_size;
  in.param_bytes = layout.param_bytes;
  in.grad_bytes = layout.reduce_bytes;
  in.prefetch = schedule.prefetch;
  in.unit_elements.assign(observed.elements.rbegin(), observed.elements.rend());  // forward order
  const FsdpMemory m = fsdp_memory(in);
  return {{"param_bytes_per_rank", m.param_bytes_per_rank},
          {"grad_bytes_per_rank", m.grad_bytes_per_rank},
          {"optimizer_bytes_per_rank", m.optimizer_bytes_per_rank},
          {"peak_gathered_bytes", m.peak_gathered_bytes},
          {"shard_group", static_cast<double>(layout.group_size)},
          {"shard_groups", static_cast<double>(layout.groups())},
          {"units", static_cast<double>(observed.elements.size())}};
}

}  // namespace

AlgorithmInfo fsdp_entry() {
  AlgorithmInfo info;
  info.name = "fsdp";
  info.summary = "sharded data parallelism (FSDP / ZeRO / HSDP): ring reduce-scatter of each unit's "
                 "gradients, all-gathers of its parameters where the sharding needs them";
  info.collective = CollectiveKind::reduce_scatter;
  info.params = {
      ParamSpec("sharding", ParamKind::choice, "full",
                "full (FULL_SHARD, ZeRO-3): gather before forward and backward; grad_op (SHARD_GRAD_OP, "
                "ZeRO-2): before forward only; hybrid (HYBRID_SHARD): full inside shard_group, shards "
                "all-reduced across groups; optimizer (ZeRO-1): gather after the step")
          .one_of({"full", "grad_op", "hybrid", "optimizer"}),
      ParamSpec("shard_group", ParamKind::integer, "0",
                "hybrid: ranks per shard group, consecutive ranks (0: the ranks of a node)")
          .between(0, 1 << 24),
      ParamSpec("unit", ParamKind::bytes, "0",
                "units (FSDP's size-based wrap): consecutive layers of at least this many fp32 bytes, "
                "closed from the last layer (0: one unit per layer-table entry)"),
      ParamSpec("prefetch", ParamKind::boolean, "true",
                "the next unit's gather runs during this unit's compute (forward and backward)"),
      ParamSpec("param_dtype", ParamKind::choice, "fp32", "parameters on the wire (gathers)")
          .one_of({"fp32", "bf16", "fp16"}),
      ParamSpec("reduce_dtype", ParamKind::choice, "fp32", "gradients on the wire (reduce-scatter, all-reduce)")
          .one_of({"fp32", "bf16", "fp16"})};
  for (ParamSpec& spec : fsdp_nccl_param_specs()) info.params.push_back(std::move(spec));
  info.reduces_in_flight = true;
  info.takes_compression = false;
  info.consensus = true;
  info.messages_per_rank_step = [](int p) { return 3.0 * (p - 1); };
  info.prepare = [](const AlgorithmConfig& cfg) {
    if (cfg.compressor && cfg.compressor->name != "none")
      throw ParamError("compression", fmt::format("fsdp reduce-scatters dense gradients; compression {} is not "
                                                  "carried by its collectives yet (leave compression out)",
                                                  cfg.compressor->name));
    check_fsdp_collective_keys(cfg.params);
    ShardLayout layout;
    layout.sharding = sharding_named(cfg.params.text("sharding"));
    layout.world = cfg.world;
    layout.group_size = shard_group_size(cfg, layout.sharding);
    layout.param_bytes = dtype_bytes(cfg.params.text("param_dtype"));
    layout.reduce_bytes = dtype_bytes(cfg.params.text("reduce_dtype"));
    ParameterSharding schedule = schedule_of(layout.sharding, cfg.params);
    schedule.shard_group = layout.group_size;
    schedule.param_element_bytes = layout.param_bytes;
    schedule.grad_element_bytes = layout.reduce_bytes;
    auto observed = std::make_shared<ObservedUnits>();
    AlgorithmRun run;
    std::function<std::unique_ptr<Aggregator>()> nccl;
    if (fsdp_param_or(cfg.params, "collectives", "ring") == "nccl") {
      nccl = fsdp_nccl_aggregators(cfg, {layout.world, layout.group_size, layout.param_bytes, layout.reduce_bytes});
      // The chunk-level reference charges each piece's route latency where it arrives.
      run.pieces_pay_latency = fsdp_param_or(cfg.params, "movement", "flow") == "chunk";
      if (run.pieces_pay_latency) {
        // Each call runs a ring actor and its sender per channel and rank.
        run.extra_actors = static_cast<std::int64_t>(cfg.world) * kNcclMaxChannels * 2;
        run.extra_actors_what = "NCCL channels (movement: chunk runs 2 actors per channel and rank)";
      }
    }
    run.make_aggregator = [op = cfg.op, layout, observed, nccl] {
      return std::make_unique<Fsdp>(op, layout, observed, nccl ? nccl() : nullptr);
    };
    run.sharding = schedule;
    run.summary_fields = [layout, schedule, observed] { return memory_fields(layout, schedule, *observed); };
    run.replay_refusal = "its steps gather and reduce unit by unit around the compute, which replay does not record";
    return run;
  };
  return info;
}

}  // namespace aggsim
