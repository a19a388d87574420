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
#include "sim/api/wire_dtype.hpp"

namespace aggsim {

namespace {

// Which ranks share shards: groups of `group_size` consecutive ranks (the world unless hybrid).
struct ShardLayout {
  FsdpSharding sharding = FsdpSharding::full;
  int world = 1;
  int group_size = 1;
  WireDtype param_dtype = WireDtype::fp32, reduce_dtype = WireDtype::fp32;  // on the wire and in the math

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

// Shard `c` of `parts` of a unit as a tensor of its own (a compressor encodes each shard apart, as
// an FSDP flat parameter's shard): its proxy values' count, the modeled pieces it cuts, id c.
TensorDesc shard_tensor(std::int64_t proxy_elements, const WireLayout& wire, int parts, int c) {
  const Range proxy = chunk_range(proxy_elements, parts, c), modeled = chunk_range(wire.size(), parts, c);
  return {{proxy.count, 1}, wire.slice(modeled.begin, modeled.count), static_cast<std::uint64_t>(c), {}};
}

// The fp32 elements a payload of `bytes` takes in a reducing collective (a 2-byte value's odd count
// rounds up, as on a reducing all-reduce: compressed_reduction.cpp).
std::uint64_t carried_elements(std::uint64_t bytes) {
  return (bytes + kFloatBytes - 1) / kFloatBytes;
}

class Fsdp final : public Aggregator {
 public:
  // `nccl`: the rank's NCCL collectives (collectives: nccl), or null for the message-level ring.
  // `compressor`: each shard's encoding on the ring's reduce-scatter, or null (dense gradients).
  Fsdp(ReduceOp op, ShardLayout layout, std::shared_ptr<ObservedUnits> observed,
       std::unique_ptr<Aggregator> nccl, std::unique_ptr<Compressor> compressor)
      : op_(op),
        layout_(layout),
        observed_(std::move(observed)),
        nccl_(std::move(nccl)),
        compressor_(std::move(compressor)) {}

  // Reduce-scatter inside the shard group (then hybrid's all-reduce of the shard across groups);
  // the rank keeps its reduced shard and zeroes the rest, which it does not own.
  void aggregate(RankContext& ctx, Gradient& grad) override {
    note_unit(ctx, grad);
    if (compressor_) return aggregate_compressed(ctx, grad);
    if (nccl_) return nccl_->aggregate(ctx, grad);
    const Group group = layout_.shard_group(ctx.rank);
    const WireDtype dtype = layout_.reduce_dtype;
    ring_reduce_scatter(*ctx.comm, group, grad, op_, dtype);
    const ChunkView owned = chunk_of(grad, group.size(), ring_owned_chunk(group.me, group.size()));
    Gradient shard = flat_gradient(grad.values.segment(owned.proxy.begin, owned.proxy.count),
                                   static_cast<std::uint64_t>(owned.wire.count));
    reduce_across_groups(ctx, shard, dtype);
    grad.values.setZero();
    grad.values.segment(owned.proxy.begin, owned.proxy.count) = shard.values;
  }

  // Every rank contributes its own (updated) shard of the unit; the ring brings it the others' (in
  // a 16-bit param_dtype as that type's values, while the rank's own shard stays its fp32 master).
  void gather_parameters(RankContext& ctx, Gradient& params) override {
    if (nccl_) return nccl_->gather_parameters(ctx, params);
    ring_allgather(*ctx.comm, layout_.shard_group(ctx.rank), params, layout_.param_dtype);
  }

  // The ring's reduce-scatter leaves rank i of a group chunk (i + 1) mod n, compressed or not.
  Range owned_shard(const RankContext& ctx, std::int64_t values) const override {
    if (nccl_) return nccl_->owned_shard(ctx, values);
    const Group group = layout_.shard_group(ctx.rank);
    return chunk_range(values, group.size(), ring_owned_chunk(group.me, group.size()));
  }

 private:
  // `shard`, the rank's reduced (not finalized) shard of its group: finalized, in `dtype`; for hybrid
  // first all-reduced across the groups (a ring reduce-scatter, the finalize, a ring all-gather).
  void reduce_across_groups(RankContext& ctx, Gradient& shard, WireDtype dtype) const {
    if (layout_.groups() == 1) {
      op_.finalize(shard.values, ctx.world);
      round_to(shard.values, dtype);
      return;
    }
    const Group replicas = layout_.replica_group(ctx.rank);
    ring_reduce_scatter(*ctx.comm, replicas, shard, op_, dtype);
    const ChunkView mine = chunk_of(shard, replicas.size(), ring_owned_chunk(replicas.me, replicas.size()));
    op_.finalize(shard.values.segment(mine.proxy.begin, mine.proxy.count), ctx.world);
    round_to(shard.values.segment(mine.proxy.begin, mine.proxy.count), dtype);
    ring_allgather(*ctx.comm, replicas, shard, dtype);
  }

  // Each shard of the unit compressed as a tensor of its own (summable: every rank's has the same
  // structure, so the reduce-scatter adds their values) and carried so that shard c's encoding is the
  // collective's chunk c; the owner decodes its reduced shard.
  void aggregate_compressed(RankContext& ctx, Gradient& grad) {
    const Group group = layout_.shard_group(ctx.rank);
    const int n = group.size(), owner = nccl_ ? group.me : ring_owned_chunk(group.me, n);
    std::vector<Payload> payloads;
    for (int c = 0; c < n; ++c) {
      const Range part = chunk_range(grad.values.size(), n, c);
      payloads.push_back(compress_on_rank(ctx, *compressor_, grad.values.segment(part.begin, part.count),
                                          shard_tensor(grad.values.size(), grad.wire_shape, n, c)));
    }
    CarriedShards carried = nccl_ ? in_equal_slots(payloads) : back_to_back(payloads);
    Eigen::VectorXf reduced = nccl_ ? reduce_on_nccl(ctx, carried, owner) : reduce_on_ring(ctx, carried, group);
    Payload& own = payloads[static_cast<std::size_t>(owner)];
    own.values = std::move(reduced);
    const TensorDesc t = shard_tensor(grad.values.size(), grad.wire_shape, n, owner);
    charge_decode(ctx, *compressor_, t);
    const Eigen::VectorXf decoded = compressor_->decompress(own, t);
    const Range part = chunk_range(grad.values.size(), n, owner);
    grad.values.setZero();
    if (part.count > 0) grad.values.segment(part.begin, part.count) = decoded;
  }

  // The n encodings as one flat gradient (ceil(bytes / 4) fp32 elements each on the wire), and where
  // each lies in it.
  struct CarriedShards {
    Gradient gradient;
    RingChunks chunks;
  };

  // The message ring: back to back, each chunk its encoding's size.
  static CarriedShards back_to_back(const std::vector<Payload>& payloads) {
    CarriedShards carried;
    std::int64_t values = 0, wire = 0;
    for (const Payload& p : payloads) {
      const auto size = static_cast<std::int64_t>(p.values.size());
      const auto elements = static_cast<std::int64_t>(carried_elements(p.wire_bytes));
      carried.chunks.push_back({{values, size}, {wire, elements}});
      values += size;
      wire += elements;
    }
    carried.gradient = flat_gradient(Eigen::VectorXf(values), static_cast<std::uint64_t>(wire));
    for (std::size_t c = 0; c < payloads.size(); ++c)
      carried.gradient.values.segment(carried.chunks[c].proxy.begin, carried.chunks[c].proxy.count) = payloads[c].values;
    return carried;
  }

  // NCCL's reduce-scatter gives every member an equal part (recvcount): each encoding in a slot of
  // the largest one's size, zero-padded, and the slots' padding is sent too.
  static CarriedShards in_equal_slots(const std::vector<Payload>& payloads) {
    std::int64_t slot_values = 0;
    std::uint64_t slot_wire = 0;
    for (const Payload& p : payloads) {
      slot_values = std::max<std::int64_t>(slot_values, p.values.size());
      slot_wire = std::max(slot_wire, carried_elements(p.wire_bytes));
    }
    const auto n = static_cast<std::int64_t>(payloads.size());
    CarriedShards carried;
    carried.gradient = flat_gradient(Eigen::VectorXf::Zero(n * slot_values), slot_wire * static_cast<std::uint64_t>(n));
    for (std::int64_t c = 0; c < n; ++c) {
      const Payload& p = payloads[static_cast<std::size_t>(c)];
      carried.chunks.push_back({{c * slot_values, p.values.size()},
                                {c * static_cast<std::int64_t>(slot_wire), static_cast<std::int64_t>(slot_wire)}});
      carried.gradient.values.segment(c * slot_values, p.values.size()) = p.values;
    }
    return carried;
  }

  // The ring's reduce-scatter of the carried encodings; the rank's reduced chunk, finalized (hybrid:
  // all-reduced across the groups).
  Eigen::VectorXf reduce_on_ring(RankContext& ctx, CarriedShards& carried, const Group& group) const {
    ring_reduce_scatter(*ctx.comm, group, carried.gradient, op_, WireDtype::fp32, &carried.chunks);
    const ChunkView& owned = carried.chunks[static_cast<std::size_t>(ring_owned_chunk(group.me, group.size()))];
    Gradient shard = flat_gradient(carried.gradient.values.segment(owned.proxy.begin, owned.proxy.count),
                                   static_cast<std::uint64_t>(owned.wire.count));
    reduce_across_groups(ctx, shard, WireDtype::fp32);
    return std::move(shard.values);
  }

  // NCCL's reduce-scatter (in fp32, its order and avg's pre-scaling; hybrid: its all-reduce across
  // the groups) of the carried encodings; the rank's slot.
  Eigen::VectorXf reduce_on_nccl(RankContext& ctx, CarriedShards& carried, int owner) const {
    nccl_->aggregate(ctx, carried.gradient);
    const Range mine = carried.chunks[static_cast<std::size_t>(owner)].proxy;
    return carried.gradient.values.segment(mine.begin, mine.count);
  }

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
  std::unique_ptr<Compressor> compressor_;
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
    throw ParamError("shard_group",
                     fmt::format("shard_group: {} does not divide the {} ranks into equal groups{}", g,
                                 cfg.world, asked == 0 ? " (a node's GPUs, the default)" : ""));
  if (g == cfg.world)
    throw ParamError(
        asked == 0 ? "sharding" : "shard_group",
        fmt::format("sharding: hybrid needs at least two groups, and shard_group {} holds all {} "
                    "ranks (use sharding: full, or a smaller shard_group)",
                    g, cfg.world));
  return static_cast<int>(g);
}

// Whether the scenario's compressor rides the reduce-scatters (shard by shard, on the ring or
// NCCL's communicator); throws
// ParamError at the key for a compressor or a setting that cannot.
bool carried_compression(const AlgorithmConfig& cfg) {
  if (!cfg.compressor || cfg.compressor->name == "none") return false;
  const std::string& name = cfg.compressor->name;
  if (cfg.compressor->reducing_transport != "compressed_reduction")
    throw ParamError(
        "compression",
        fmt::format("compression {} reduces with its own all-reduces of whole tensors (PowerSGD's P and "
                    "Q), which fsdp's reduce-scatter of shards cannot carry; use ring_allreduce "
                    "(DDP) for it, or a summable compressor (fp16, randomk with shared_seed: true)",
                    name));
  if (!cfg.make_compressor()->summable())
    throw ParamError(
        "compression",
        fmt::format("compressor '{}' is not summable (each rank's payload has its own structure), so "
                    "fsdp's reduce-scatter cannot add its payloads in flight; summable compressors ride "
                    "it: fp16, randomk with shared_seed: true (or use algorithm 'allgather' or "
                    "'parameter_server' for {})",
                    name, name));
  if (cfg.params.text("reduce_dtype") != "fp32")
    throw ParamError("reduce_dtype",
                     fmt::format("reduce_dtype: {} with compression {}: the compressor sets the "
                                 "gradients' encoding on the wire (leave reduce_dtype at fp32)",
                                 cfg.params.text("reduce_dtype"), name));
  return true;
}

// One rank's bytes of a unit's compressed reduce-scatter input on the wire (collectives.csv's
// wire_bytes): each of the `parts` shards encoded apart, in whole fp32 elements as the ring carries
// it; over NCCL (`equal_slots`) every shard in a slot of the largest encoding's size.
std::function<std::uint64_t(const WireLayout&)> encoded_unit_bytes(const AlgorithmConfig& cfg, int parts,
                                                                   bool equal_slots) {
  std::shared_ptr<const Compressor> compressor = cfg.make_compressor();
  return [compressor, parts, equal_slots](const WireLayout& unit) {
    std::uint64_t bytes = 0, largest = 0;
    for (int c = 0; c < parts; ++c) {
      const std::uint64_t shard =
          kFloatBytes * carried_elements(compressor->encoded_bytes(shard_tensor(0, unit, parts, c).wire));
      bytes += shard;
      largest = std::max(largest, shard);
    }
    return equal_slots ? largest * static_cast<std::uint64_t>(parts) : bytes;
  };
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
  in.param_bytes = wire_dtype_bytes(layout.param_dtype);
  in.grad_bytes = wire_dtype_bytes(layout.reduce_dtype);
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
  info.summary =
      "sharded data parallelism (FSDP / ZeRO / HSDP): ring reduce-scatter of each unit's "
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
      ParamSpec(
          "param_dtype", ParamKind::choice, "fp32",
          "parameters in the gathers, on the wire and in the math (each rank keeps its own shard in fp32)")
          .one_of({"fp32", "bf16", "fp16"}),
      ParamSpec(
          "reduce_dtype", ParamKind::choice, "fp32",
          "gradients in the reduce-scatter and all-reduce, on the wire and in the math (every partial sum "
          "rounded to it)")
          .one_of({"fp32", "bf16", "fp16"})};
  for (ParamSpec& spec : fsdp_nccl_param_specs()) info.params.push_back(std::move(spec));
  info.reduces_in_flight = true;
  info.compresses_itself = true;
  info.consensus = true;
  info.messages_per_rank_step = [](int p) { return 3.0 * (p - 1); };
  info.prepare = [](const AlgorithmConfig& cfg) {
    check_fsdp_collective_keys(cfg.params);
    ShardLayout layout;
    layout.sharding = sharding_named(cfg.params.text("sharding"));
    layout.world = cfg.world;
    layout.group_size = shard_group_size(cfg, layout.sharding);
    layout.param_dtype = wire_dtype_named(cfg.params.text("param_dtype"));
    layout.reduce_dtype = wire_dtype_named(cfg.params.text("reduce_dtype"));
    const bool compresses = carried_compression(cfg);
    ParameterSharding schedule = schedule_of(layout.sharding, cfg.params);
    schedule.shard_group = layout.group_size;
    schedule.param_element_bytes = wire_dtype_bytes(layout.param_dtype);
    schedule.grad_element_bytes = wire_dtype_bytes(layout.reduce_dtype);
    if (compresses)
      schedule.reduce_wire_bytes =
          encoded_unit_bytes(cfg, layout.group_size, fsdp_param_or(cfg.params, "collectives", "ring") == "nccl");
    auto observed = std::make_shared<ObservedUnits>();
    AlgorithmRun run;
    std::function<std::unique_ptr<Aggregator>()> nccl;
    if (fsdp_param_or(cfg.params, "collectives", "ring") == "nccl") {
      nccl =
          fsdp_nccl_aggregators(cfg, {layout.world, layout.group_size, wire_dtype_bytes(layout.param_dtype),
                                      wire_dtype_bytes(layout.reduce_dtype)});
      // The chunk-level reference charges each piece's route latency where it arrives.
      run.pieces_pay_latency = fsdp_param_or(cfg.params, "movement", "flow") == "chunk";
      if (run.pieces_pay_latency) {
        // Each call runs a ring actor and its sender per channel and rank.
        run.extra_actors = static_cast<std::int64_t>(cfg.world) * kNcclMaxChannels * 2;
        run.extra_actors_what = "NCCL channels (movement: chunk runs 2 actors per channel and rank)";
      }
    }
    run.make_aggregator = [cfg, layout, observed, nccl, compresses] {
      return std::make_unique<Fsdp>(cfg.op, layout, observed, nccl ? nccl() : nullptr,
                                    compresses ? cfg.make_compressor() : nullptr);
    };
    run.sharding = schedule;
    run.summary_fields = [layout, schedule, observed] { return memory_fields(layout, schedule, *observed); };
    // Every rank's step is the same collectives around the same compute (sim/engine/replay.hpp).
    run.replay_refusal = run.pieces_pay_latency ? "movement: chunk interleaves its channels' pieces by timing" : "";
    return run;
  };
  return info;
}

}  // namespace aggsim
