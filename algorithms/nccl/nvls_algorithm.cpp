#include "algorithms/nccl/nvls_algorithm.hpp"

#include <algorithm>

#include "algorithms/nccl/nvls_shards.hpp"

namespace aggsim {

// Each GPU's switch traffic as a stream to the next GPU of its node (the same bytes on each NVLink
// port, which is what the switch's in-line reduction and multicast cost it).
void NvlsAlgorithm::build(NcclGeometryBuilder& b, int channels) const {
  Geometry& g = b.geometry();
  const int p = view_.size();
  g.nvls_out.resize(static_cast<std::size_t>(channels));
  for (int c = 0; c < channels; ++c) {
    auto& out = g.nvls_out[static_cast<std::size_t>(c)];
    out.resize(static_cast<std::size_t>(p));
    for (int n = 0; n < view_.nodes(); ++n) {
      const auto& nm = view_.node_members(n);
      for (std::size_t i = 0; i < nm.size(); ++i)
        out[static_cast<std::size_t>(nm[i])] = {nm[i], nm[(i + 1) % nm.size()]};
    }
    for (auto& e : out)
      if (e.from != e.to) b.add(e);
    ++b.phase;
  }
}

// NVLS: each GPU's share to the switch and back; NVLS-Tree adds the node tree, up and down.
double NvlsAlgorithm::nvls_fill(const NcclCallPlan& plan, const Geometry& g) const {
  const Protocol proto = plan.choice.protocol;
  const int c_count = plan.choice.channels, p = view_.size();
  auto hop = [&](const Geometry::Edge& e, double piece_bytes) {
    return piece_time(costs_.wire_bytes(piece_bytes, proto), e.first_rate, e.cls) + e.latency +
           costs_.hop(e.cls, proto);
  };
  const double piece = plan.data_bytes / (static_cast<double>(c_count) * plan.loops);
  // An all-reduce's per-call cost grows with NCCL's NVLS heads (kNvlsHeadCallSeconds), measured on
  // calls whose channels carry many loops of a full chunk (kNvlsChunkSize) a head. A call whose
  // channels carry less than one such loop pays that share of it: at 1 MiB on two H100 nodes a
  // sixteenth, as those runs show (tests/algorithms/test_nccl_nvls.cpp).
  // Across NVLink domains of several trays NVLS-Tree pays it twice (kNvlsTreeAcrossDomainsShare).
  const double heads = view_.system(c_count, options_.arch).nvls_heads;
  const double full_loop = heads * kNvlsChunkSize;
  const double head_passes = view_.across_tray_domains() ? 2 : 1;
  const double heads_cost = options_.collective == NcclCollective::all_reduce
                                ? head_passes * heads * std::min(1.0, plan.data_bytes / c_count / full_loop) *
                                      costs_.nvls_head_latency_s
                                : 0;
  double worst = 0;
  for (int c = 0; c < c_count; ++c) {
    double up = 0, down = 0;
    if (!g.tree_up.empty()) {
      const double shard = piece / std::max(1, view_.largest_node());
      for (int m = 0; m < p; ++m) {
        double cost_up = 0, cost_down = 0;
        for (int x = m; g.tree_up[c][static_cast<std::size_t>(x)].from >= 0;
             x = g.tree_up[c][static_cast<std::size_t>(x)].to) {
          cost_up += hop(g.tree_up[c][static_cast<std::size_t>(x)], shard);
          cost_down += hop(g.tree_down[c][static_cast<std::size_t>(x)], shard);
        }
        up = std::max(up, cost_up);
        down = std::max(down, cost_down);
      }
    }
    double intra = 0;
    const double per_port =
        piece * nvls_port_bytes_per_byte(options_.collective, view_.largest_node()) / costs_.nvls_efficiency;
    for (const auto& e : g.nvls_out[static_cast<std::size_t>(c)])
      if (e.from != e.to)
        intra =
            std::max(intra, piece_time(costs_.wire_bytes(per_port, proto), e.first_rate, e.cls) + e.latency);
    worst = std::max(worst, costs_.nvls_hop_latency_s + heads_cost + intra + up + down);
  }
  return worst;
}

// Each GPU's switch traffic, S (1 + 1/g) each way, as a stream to the next GPU of its node; under
// NVLS-Tree each GPU's shard up and down the node tree besides.
void NvlsAlgorithm::streams(const NcclCallPlan& plan, const Geometry& g, std::int64_t w,
                            const NcclStreamSink& add) const {
  const int channels = plan.choice.channels, p = view_.size();
  const Pieces per_channel{0, w, channels};
  for (int c = 0; c < channels; ++c) {
    const double data = per_channel.data_bytes(c);
    for (int me = 0; me < p; ++me) {
      const auto node_gpus = static_cast<int>(view_.node_members(view_.node_of(me)).size());
      const double share = 1.0 / node_gpus;
      const auto& e = g.nvls_out[static_cast<std::size_t>(c)][static_cast<std::size_t>(me)];
      add(e.from, e.to, data * nvls_port_bytes_per_byte(options_.collective, node_gpus), c,
          1 / costs_.nvls_efficiency);
      if (!g.tree_up.empty()) {
        const int parent = g.tree[static_cast<std::size_t>(c)][static_cast<std::size_t>(me)].parent;
        const double shard = data * share;
        if (parent >= 0) {
          add(me, parent, shard, c, 1);  // up
          add(parent, me, shard, c, 1);  // down
        }
      }
    }
  }
}

std::vector<Eigen::VectorXf> nccl_nvls_node_sums(const NcclView& view, const Range& r,
                                                 const std::vector<const Eigen::VectorXf*>& inputs,
                                                 const NcclOp& op) {
  const auto x = [&](int member) -> const Eigen::VectorXf& {
    return *inputs[static_cast<std::size_t>(member)];
  };
  std::vector<Eigen::VectorXf> node_sum(static_cast<std::size_t>(view.nodes()));
  for (int nd = 0; nd < view.nodes(); ++nd) {
    const auto& nm = view.node_members(nd);
    auto& acc = node_sum[static_cast<std::size_t>(nd)];
    acc.resize(r.count);
    op.load(acc, x(nm[0]).segment(r.begin, r.count));
    for (std::size_t i = 1; i < nm.size(); ++i) op.add_input(acc, x(nm[i]).segment(r.begin, r.count));
  }
  return node_sum;
}

std::unique_ptr<NcclAlgorithmModel> make_nvls_algorithm(const NcclContext& context) {
  return std::make_unique<NvlsAlgorithm>(context);
}

// The switch adds the node's GPUs in local order.
Eigen::VectorXf nccl_nvls_reduce(const NcclView& view, const NcclCallPlan& plan,
                                 const std::vector<const Eigen::VectorXf*>& inputs, const NcclOp& op) {
  return nccl_reduce_per_channel(inputs.front()->size(), plan.choice.channels, [&](int, const Range& r) {
    return nccl_nvls_node_sums(view, r, inputs, op)[0];
  });
}

// NVLS's reduce-scatter runs inside one node (nvls_shards.hpp): the switch adds its GPUs in local order.
Eigen::VectorXf nvls_call_reduce_scatter(const NcclView& view, const NcclCallPlan&,
                                         const std::vector<const Eigen::VectorXf*>& inputs, const ReduceOp& op,
                                         int world, WireDtype dtype) {
  return nccl_nvls_reduce_scatter(view.node_members(0), inputs, op, world, dtype);
}

// NVLS (and with it NVLS-Tree) off for an op and type the switch does not reduce (nvls_for_op), and
// on every node with NCCL_NVLS_ENABLE=0 (`nvls: off`).
NcclSystem nvls_system_for_calls(NcclSystem system, const NcclOptions& options) {
  if (!options.nvls_enabled) system.nvls = false;
  return nvls_for_op(system, options.collective, options.nvls_reduces_op);
}

// NCCL's own NVLS rate on Blackwell, unless a calibration fitted one: the share of the port that NCCL
// 2.30.7's tuning (src/graph/tuning.cc) credits the NVLS graph of one node alone with. Across nodes
// NCCL's graph takes the NIC's speed (src/graph/search.cc: 48 GB/s a channel with 400 Gb/s NICs,
// against 80 inside a node of 8 B200), but the switch reduces inside each node at its own rate
// whatever the NICs: rated by that graph two nodes of 8 B200 ran at 0.36 of the port, 510 GB/s
// busbw, where published runs reach 690 - 720 (tests/algorithms/test_nccl_nvls.cpp).
// The efficiency is a share of the port's rate; the links the switch traffic crosses carry
// nvlink_efficiency of it, so over them it is that much larger.
void nvls_costs_for_calls(ProtocolCosts& costs, const NcclSystem& system, const NcclView& view,
                          const NcclOptions& options) {
  const bool calibrated = costs.nvls_efficiency != kHopperNvlsEfficiency;
  if (options.arch == GpuArch::blackwell && !calibrated && system.nvls) {
    const double port_GBps = view.intra_bandwidth() / 1e9;
    const NvlsGraph node_graph =
        nccl_nvls_graph(view.largest_node(), 1, 0, nccl_nvlink_GBps(options.arch, port_GBps), 0, options.arch);
    costs.nvls_efficiency = nccl_blackwell_nvls_port_share(node_graph, port_GBps);
  }
  // Across NVLink domains of several trays NVLS runs as NVLS-Tree, at a share of the switch's rate.
  if (!calibrated && view.across_tray_domains()) costs.nvls_efficiency *= kNvlsTreeAcrossDomainsShare;
  costs.nvls_efficiency /= view.nvlink_efficiency();
}

}  // namespace aggsim
