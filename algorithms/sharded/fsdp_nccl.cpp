// fsdp over NCCL's communicator: one reduce-scatter and one all-gather communicator per shard group,
// and for hybrid one all-reduce communicator per set of ranks holding the same shard.
#include "algorithms/sharded/fsdp_nccl.hpp"

#include <fmt/format.h>

#include "algorithms/nccl/nccl_communicator.hpp"
#include "algorithms/nccl/nccl_setup.hpp"
#include "algorithms/nccl/nvls_shards.hpp"
#include "algorithms/nccl/pat_schedule.hpp"
#include "algorithms/nccl/ring_shards.hpp"

namespace aggsim {

namespace {

struct FsdpNcclComms {
  FsdpNcclLayout layout;
  std::vector<std::shared_ptr<NcclCommunicator>> scatter, gather;  // by shard group
  std::vector<std::shared_ptr<NcclCommunicator>> across;           // hybrid: by index in the group
};

// Runs `call` with `g` on the wire at `element_bytes` an element (NCCL's call moves wire_elements
// fp32 elements: a 16-bit dtype halves them).
template <class Call>
void at_wire_precision(Gradient& g, std::uint64_t element_bytes, const Call& call) {
  const std::uint64_t fp32 = g.wire_elements;
  g.wire_elements = (fp32 * element_bytes + 3) / 4;
  call();
  g.wire_elements = fp32;
}

class FsdpNccl final : public Aggregator {
 public:
  FsdpNccl(std::shared_ptr<const FsdpNcclComms> comms, ReduceOp op) : comms_(std::move(comms)), op_(op) {}

  void aggregate(RankContext& ctx, Gradient& grad) override {
    const FsdpNcclLayout& l = comms_->layout;
    const int group = ctx.rank / l.group_size, me = ctx.rank % l.group_size;
    at_wire_precision(grad, l.reduce_bytes, [&] {
      comms_->scatter[static_cast<std::size_t>(group)]->run(*ctx.comm, me, grad, op_, ctx.world, ctx.choice);
    });
    if (comms_->across.empty()) return;
    // Hybrid: the shard's sum across the groups. avg's 1 / world was applied as the groups' inputs
    // were read, so the groups' partial results add.
    const Range mine = nccl_shard(static_cast<std::int64_t>(grad.values.size()), l.group_size, me);
    const Range wire = nccl_shard(static_cast<std::int64_t>(grad.wire_elements), l.group_size, me);
    Gradient shard = flat_gradient(grad.values.segment(mine.begin, mine.count),
                                   static_cast<std::uint64_t>(wire.count));
    const ReduceOp across = op_.adds() ? ReduceOp{ReduceKind::sum, 1.0} : op_;
    at_wire_precision(shard, l.reduce_bytes, [&] {
      comms_->across[static_cast<std::size_t>(me)]->run(*ctx.comm, group, shard, across, ctx.world, nullptr);
    });
    if (mine.count > 0) grad.values.segment(mine.begin, mine.count) = shard.values;
  }

  // In a 16-bit param_dtype every shard arrives as that type's values; the rank's own shard stays
  // its fp32 master copy (FSDP's mixed precision keeps one; aggsim's one weight vector holds both).
  void gather_parameters(RankContext& ctx, Gradient& params) override {
    const FsdpNcclLayout& l = comms_->layout;
    const int me = ctx.rank % l.group_size;
    const Range mine = nccl_shard(static_cast<std::int64_t>(params.values.size()), l.group_size, me);
    const Eigen::VectorXf master = params.values.segment(mine.begin, mine.count);
    at_wire_precision(params, l.param_bytes, [&] {
      comms_->gather[static_cast<std::size_t>(ctx.rank / l.group_size)]->run(*ctx.comm, me, params, op_, ctx.world,
                                                                            ctx.choice);
    });
    if (mine.count > 0) params.values.segment(mine.begin, mine.count) = master;
  }

  Range owned_shard(const RankContext& ctx, std::int64_t values) const override {
    return nccl_shard(values, comms_->layout.group_size, ctx.rank % comms_->layout.group_size);
  }

 private:
  std::shared_ptr<const FsdpNcclComms> comms_;
  ReduceOp op_;
};

NcclOptions options_of(const Params& params, NcclCollective collective, GpuArch arch, const ReduceOp& op) {
  NcclOptions o;
  // Gathers move parameters (param_dtype); reduce-scatters and hybrid's all-reduce gradients.
  o.dtype = wire_dtype_named(params.text(collective == NcclCollective::all_gather ? "param_dtype" : "reduce_dtype"));
  o.protocol = protocol_named(fsdp_param_or(params, "protocol", "auto"));
  o.movement = fsdp_param_or(params, "movement", "flow") == "chunk" ? Movement::chunk : Movement::flow;
  o.collective = collective;
  o.arch = arch;
  o.nvls_reduces_op = nccl_nvls_reduces(op, o.dtype);
  o.pat_reduces_op = pat_reduces(op);
  return o;
}

}  // namespace

// The keys are absent unless written (resolved.yaml then shows them only where a scenario sets them).
std::vector<ParamSpec> fsdp_nccl_param_specs() {
  return {
      ParamSpec("collectives", ParamKind::choice, "",
                "ring (when absent): the message-level ring; nccl: NCCL's communicator (NCCL's choice of ring, PAT "
                "at one GPU per node or, inside one node, NVLS for reduce-scatter and all-gather; its all-reduce "
                "across hybrid's groups)")
          .one_of({"ring", "nccl"}),
      ParamSpec("protocol", ParamKind::choice, "",
                "collectives: nccl: NCCL's protocol (NCCL_PROTO); auto (when absent) = NCCL's choice per call")
          .one_of({"auto", "ll", "ll128", "simple"}),
      ParamSpec("movement", ParamKind::choice, "",
                "collectives: nccl: flow (when absent; each channel edge one stream) or chunk (every piece a "
                "message, NCCL's ring or PAT: the reference)")
          .one_of({"flow", "chunk"}),
  };
}

std::string fsdp_param_or(const Params& params, const std::string& key, const std::string& absent) {
  return params.has(key) ? params.text(key) : absent;
}

void check_fsdp_collective_keys(const Params& params) {
  if (fsdp_param_or(params, "collectives", "ring") == "nccl") return;
  for (const char* key : {"protocol", "movement"})
    if (params.has(key))
      throw ParamError(key, fmt::format("{}: {} sets how NCCL's collectives run, and these are the message-level "
                                        "ring: set collectives: nccl",
                                        key, params.text(key)));
}

std::function<std::unique_ptr<Aggregator>()> fsdp_nccl_aggregators(const AlgorithmConfig& cfg,
                                                                   const FsdpNcclLayout& layout) {
  if (!cfg.hosts())
    return []() -> std::unique_ptr<Aggregator> {
      throw std::logic_error("fsdp: NCCL's aggregators are made once the platform is built");
    };
  const std::vector<sg4::Host*>& hosts = *cfg.hosts();
  const GpuArch arch =
      platform_arch({hosts.begin(), hosts.begin() + std::min<std::size_t>(hosts.size(), cfg.world)});
  auto comms = std::make_shared<FsdpNcclComms>();
  comms->layout = layout;
  const int groups = layout.world / layout.group_size;
  const auto communicator = [&](const std::vector<int>& members, NcclCollective collective) {
    // Hybrid's all-reduce sums shards already scaled (FsdpNccl::aggregate).
    const ReduceOp op = collective == NcclCollective::all_reduce && cfg.op.adds() ? ReduceOp{ReduceKind::sum, 1.0}
                                                                                   : cfg.op;
    NcclOptions o = options_of(cfg.params, collective, arch, op);
    // The piece-by-piece reference runs NCCL's ring, and PAT where NCCL may choose it (one GPU per node);
    // NVLS moves at flow level only.
    const NcclView view(members, hosts);
    if (o.movement == Movement::chunk && !pat_placement_runs(view.size(), view.nodes())) o.algorithm = NcclAlgorithm::ring;
    return std::make_shared<NcclCommunicator>(members, hosts, o, protocol_costs_of(cfg.calibration),
                                              cfg.bandwidth_factor());
  };
  for (int g = 0; g < groups; ++g) {
    std::vector<int> members;
    for (int i = 0; i < layout.group_size; ++i) members.push_back(g * layout.group_size + i);
    comms->scatter.push_back(communicator(members, NcclCollective::reduce_scatter));
    comms->gather.push_back(communicator(members, NcclCollective::all_gather));
  }
  if (groups > 1)
    for (int i = 0; i < layout.group_size; ++i) {
      std::vector<int> members;
      for (int g = 0; g < groups; ++g) members.push_back(g * layout.group_size + i);
      comms->across.push_back(communicator(members, NcclCollective::all_reduce));
    }
  const ReduceOp op = cfg.op;
  return [comms, op] { return std::make_unique<FsdpNccl>(comms, op); };
}

}  // namespace aggsim
