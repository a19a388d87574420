#pragma once
// NCCL's protocols as the network sees them, one model for nccl_allreduce, MSCCL programs and the
// calibration. A protocol is, per class of link a piece crosses, a per-hop latency (the time from
// one GPU's send of a piece to the next GPU's use of it, beyond the wire: flag polling for LL and
// LL128, memory fences and a proxy thread for Simple), and a bandwidth efficiency (the share of the
// bytes on the wire that is data: LL sends a 4-byte flag with every 4 bytes of data, LL128 8 bytes
// of flags with every 120). The wire latency and bandwidth themselves come from the platform.
//
// Defaults are NCCL 2.21.5's own estimates (src/graph/tuning.cc: the Ring rows of hwLat, in us,
// and the ring bandwidth refinements: LL 0.5, LL128 0.92), which the calibration refines; NCCL's
// choice of algorithm and protocol keeps using NCCL's table (nccl_tuning.hpp), as NCCL itself does.
#include <array>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "algorithms/calibration_capability.hpp"

namespace aggsim {

enum class Protocol { ll, ll128, simple };
inline constexpr std::array<Protocol, 3> kProtocols = {Protocol::ll, Protocol::ll128, Protocol::simple};
const char* protocol_name(Protocol p);

// What a hop crosses: NVLink or PCIe inside a node, or the network between nodes.
enum class LinkClass { nvlink, pcie, network };
inline constexpr std::array<LinkClass, 3> kLinkClasses = {LinkClass::nvlink, LinkClass::pcie,
                                                          LinkClass::network};

// NCCL's collective algorithms (CollNet is not modelled); PAT (NCCL 2.23 and later) runs
// reduce-scatter and all-gather only.
enum class NcclAlgorithm { tree, ring, nvls, nvls_tree, pat };
inline constexpr std::array<NcclAlgorithm, 5> kNcclAlgorithms = {
    NcclAlgorithm::tree, NcclAlgorithm::ring, NcclAlgorithm::nvls, NcclAlgorithm::nvls_tree, NcclAlgorithm::pat};
const char* nccl_algorithm_name(NcclAlgorithm a);
// NVLS or NVLS-Tree: the algorithms that reduce in the nodes' switch.
inline bool is_nvls(NcclAlgorithm a) {
  return a == NcclAlgorithm::nvls || a == NcclAlgorithm::nvls_tree;
}
// The algorithm or protocol of that name, none for another word ("auto").
std::optional<NcclAlgorithm> nccl_algorithm_named(const std::string& name);
std::optional<Protocol> protocol_named(const std::string& name);

// What NVLS and NVLS-Tree need of the hardware (src/transport/nvls.cc ncclNvlsInit, NCCL 2.21.5):
// the nodes' GPUs on a switch, GPUs whose memory the switch can reduce and multicast (Hopper and
// later: an A100's NVSwitch only forwards), and more than two GPUs in a node.
struct NvlsHardware {
  bool nvswitch = false;       // every node's GPUs sit on a switch
  bool gpu_multicast = true;   // the GPUs have NVLS (the `gpu` key: hopper)
  int smallest_node = 3;       // GPUs of the communicator's smallest node
};

// Where NCCL runs an algorithm: NVLS and NVLS-Tree need NvlsHardware; NVLS stays inside one node,
// NVLS-Tree joins nodes. With nccl_protocol_runs, one rule for NCCL's own choice, a scenario's forced
// algorithm and a log's NCCL settings, each of which words its refusal for its own reader.
enum class NcclPlacement {
  runs,
  needs_switch,
  needs_nvls_gpu,
  needs_three_gpus,
  nvls_spans_nodes,
  nvls_tree_on_one_node
};
NcclPlacement nccl_placement(NcclAlgorithm a, int nodes, const NvlsHardware& hardware);
// NVLS, NVLS-Tree and PAT run the Simple protocol only.
bool nccl_protocol_runs(NcclAlgorithm a, Protocol p);


// The share of an H100's NVLink port rate NVLS reaches: NCCL's NVLS efficiency on Hopper (0.85,
// `nvlsEfficiency` in src/graph/tuning.cc since NCCL 2.28.3, the first NCCL to state it) of the rate
// NCCL's topology credits an NVLink with (SM90_NVLINK_BW, 20.6 of a link's 25 GB/s): 0.70. On one
// node of 8 H100 (450 GB/s ports) an all-reduce then reaches 490 GB/s busbw where published runs
// measure 474 - 477 (tests/algorithms/test_nccl_nvls.cpp).
inline constexpr double kHopperNvlsEfficiency = 0.85 * 20.6 / 25.0;
// Blackwell's follows NCCL's NVLS graph of one node (nccl_blackwell_nvls_port_share,
// algorithms/nccl/nccl_tuning.hpp; nvls_costs_for_calls, algorithms/nccl/nvls_algorithm.cpp).

// What an NVLS or NVLS-Tree all-reduce call costs beyond its rate, for each of NCCL's NVLS heads
// (a GPU per NVLS channel of the node: 8 on an 8-GPU node, at most NCCL_MAX_NVLS_ARITY, 32, so 32
// on an NVL72 rack). NCCL's tuning prices an NVLS call at one latency whatever its heads (hwLat's
// 25 us, NCCL 2.21.5 to 2.30.7), but the published NVLS runs take t = a + S / B with an `a` that
// grows with the heads. The value is a calibration on the four DGX H100 runs of tests/data
// (h100_q2ndr_1node, voltagepark_h100_1node, xe9680_h100_2node, h100_ib400_2node: 8 heads each):
// their out-of-place times from 512 MiB exceed the model's own by 0.13 - 0.15 ms a call, 17 us a
// head on average (tests/algorithms/test_nccl_nvls.cpp recomputes it from the logs). It predicts
// 0.57 ms on one GB200 NVL72 rack, whose run (coreweave/nccl-tests#43, NCCL 2.25.1) shows 0.58 ms.
// Reduce-scatter and all-gather, which no published NVLS run here measures, keep NCCL's 25 us.
inline constexpr double kNvlsHeadCallSeconds = 17.1e-6;

// NVLS-Tree across NVLink domains of several trays (multi-node NVLink: NVL72 racks joined by their
// NICs) is slower than NVLS inside one, for a reason NCCL's source does not show (platforms/PUBLISHED.md).
// Two published runs of two racks (coreweave's GB200, NCCL 2.25.1 over InfiniBand; Oracle's GB300,
// NCCL 2.28.7 over RoCE) cost 0.454 and 0.457 ms a call more than one rack of each, 14 us for each of
// their 32 NVLS heads: the model has them pay kNvlsHeadCallSeconds a head once more. And they move
// more slowly than the switch's NVLS rate: this share of it, fitted to coreweave's two racks
// (out-of-place times from 512 MiB, t = a + S / B) and checked against Oracle's
// (tests/algorithms/test_nccl_nvls.cpp).
inline constexpr double kNvlsTreeAcrossDomainsShare = 0.877;

// What one channel of an H100 moves over one network connection, each way: 20 GB/s. A channel is
// one CTA (one SM) whose network traffic goes through its own buffer slots and the proxy thread, so
// NICs fed by few channels run below their rate. NCCL gives a node two channels per NIC across nodes
// (a search channel per 400 Gb/s NIC, doubled: NCCL 2.30.7 src/graph/connect.cc; "16 coll channels"
// on three 8-H100 nodes, tests/data/nccl_info), and doubles them again where that does not reach
// the NICs' peak ("4 compute channels per search channel to reach peak BW on <8 PPN", same file).
// NVIDIA: "Rings degrade at scale, and Trees need too many SMs to reach peak", the default being 16
// SMs (NVIDIA/nccl#1649, 2025-03-20); with eight 400 Gb/s NICs NCCL_MIN_CTAS=24 "may get you above
// 380 GB/s" (NVIDIA/nccl-tests#309, 2025-06-18). The value: 4 nodes of 8 H100 with eight 400 Gb/s
// NICs each reach 320 GB/s busbw at 4 - 8 GiB on NCCL 2.19.3's 16 default channels (NVIDIA/nccl#1221,
// 2024-03-13), 20 GB/s a channel. Other generations: no published bound, none applied (a DGX A100's
// 16 channels fill its eight 200 Gb/s NICs: 192 GB/s busbw, NVIDIA in NVIDIA/nccl#812).
inline constexpr double kHopperNetworkChannelGBps = 20;

struct ProtocolCosts {
  // Seconds per hop beyond the wire, [link class][protocol].
  std::array<std::array<double, 3>, 3> hop_latency_s{};
  // Share of the wire bytes that is data, [protocol].
  std::array<double, 3> efficiency{};
  // Seconds per call before the first piece moves (kernel launch and setup), [algorithm][protocol].
  std::array<std::array<double, 3>, 5> base_latency_s{};
  // Per-hop latency of NVLS's switch operations inside a node and across nodes (Simple only).
  double nvls_hop_latency_s = 0;
  // An NVLS or NVLS-Tree all-reduce call's cost for each NVLS head (kNvlsHeadCallSeconds).
  double nvls_head_latency_s = 0;
  // Share of a GPU's NVLink port rate that NVLS's switch operations (multimem reduce, multicast)
  // reach (kHopperNvlsEfficiency by default); a calibration fits it where NVLS ran.
  double nvls_efficiency = 1;

  double hop(LinkClass c, Protocol p) const {
    return hop_latency_s[static_cast<int>(c)][static_cast<int>(p)];
  }
  double eff(Protocol p) const { return efficiency[static_cast<int>(p)]; }
  double base(NcclAlgorithm a, Protocol p) const {
    return base_latency_s[static_cast<int>(a)][static_cast<int>(p)];
  }
  // Wire bytes that carry `data_bytes` under protocol `p` (at least the data).
  double wire_bytes(double data_bytes, Protocol p) const { return data_bytes / eff(p); }

  // NCCL 2.21.5's values.
  static ProtocolCosts nccl_defaults();
};

// NCCL's protocol costs as a calibration fitted them: the model parameters that nccl_allreduce,
// and whatever else runs NCCL's protocols, read from a run's calibration.
struct NcclProtocolParameters : ModelParameters {
  ProtocolCosts costs;
  explicit NcclProtocolParameters(const ProtocolCosts& fitted) : costs(fitted) {}
  bool same_as(const ModelParameters& other) const override;
  std::string what() const override { return "NCCL's network costs"; }
};
// The fitted costs in `model`, or null when it holds none.
const ProtocolCosts* fitted_protocol_costs(const ModelParameters* model);
// The costs a run takes: its calibration's, else NCCL's own.
ProtocolCosts protocol_costs_of(const std::shared_ptr<const RunCalibration>& calibration);

}  // namespace aggsim
