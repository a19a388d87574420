#include "algorithms/nccl/nccl_tuning.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <stdexcept>

namespace aggsim {

namespace {

// NCCL 2.21.5's constants (src/graph/tuning.cc, src/include/device.h, src/include/comm.h,
// src/init.cc), in its units: microseconds and GB/s. Indices: [algorithm] tree, ring, nvls,
// nvls_tree; [protocol] LL, LL128, Simple; [hardware] NVLink, PCI, network.
constexpr double kBaseLat[5][3] = {{6.8, 14.0, 0}, {6.6, 14.0, 8.4}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}};
constexpr double kHwLat[3][5][3] = {
    {{.6, 1.25, 28}, {.6, 1.9, 3.4}, {0, 0, 25}, {0, 0, 25}, {0, 0, 0}},
    {{1.0, 1.9, 28}, {1.0, 2.5, 5.7}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}},
    {{5.0, 8.5, 28}, {2.7, 4.0, 14.0}, {0, 0, 18}, {0, 0, 14}, {0, 0, 0}},
};
// Reduce-scatter and all-gather follow NCCL 2.23.4 (the first NCCL with PAT), whose table differs
// from 2.21.5's for them in three ways: PAT's own row (Simple only, one GPU per node, the tree
// graph's bandwidth x 0.85 unconverted, a latency of 8 + log2(nodes) x interLat / 3.5 + ranks x 2.8
// us); with one GPU per node every algorithm's inter-node latency is the tree's (LL 5.0, LL128 8.5,
// Simple 14 us) and a ring's LL128 counts 0.92 of its bandwidth (no longer 0.7); NVLS's bandwidth
// counts as it is (no 5/6).
constexpr double kTreeNetLat2234[3] = {5.0, 8.5, 14.0};
constexpr double kPatBandwidthShare = 0.85;
constexpr int kNvlink = 0, kPci = 1, kNet = 2;
// Per-generation caps, rows volta, ampere, hopper, blackwell; columns [1 node, 2 nodes, more]. The
// Blackwell rows are NCCL 2.26.2's, twice Hopper's (src/graph/tuning.cc; the version of the published
// GB200 NVL72 runs, tests/data/README.md; NCCL 2.28.3 lowered them to LL128 ring 40, tree
// 55.6 / 31.67 / 20, tree 70 / 42.8 / 24); the other rows are unchanged since 2.21.5. LL bandwidth
// caps: [GPU generation on one node, CPU vendor (Intel) beyond].
constexpr double kLlMaxBw[4][3] = {
    {39.0, 39.0, 20.4}, {87.7, 22.5, 19.0}, {141.0, 45.0, 35.0}, {2 * 141.0, 2 * 45.0, 2 * 35.0}};
constexpr double kPerChMaxRingLL128Bw[4][3] = {
    {20, 20, 20}, {20, 20, 20}, {36.7, 36.7, 36.7}, {2 * 36.7, 2 * 36.7, 2 * 36.7}};
constexpr double kPerChMaxTreeLL128Bw[4][3] = {
    {20, 20, 20}, {20, 20, 20}, {36.7, 36.7, 29.0}, {2 * 36.7, 2 * 36.7, 2 * 29.0}};
constexpr double kPerChMaxTreeBw[4][3] = {
    {26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {38.7, 41.4, 36.0}, {2 * 38.7, 2 * 41.4, 2 * 36.0}};
// RCCL's base latencies (ROCm/rccl src/graph/tuning.cc, tree and ring alike), LL / LL128 / Simple.
constexpr double kRcclBaseLat[3] = {12.0, 12.0, 17.0};
// RCCL 2.21.5's (ROCm 6.3) tuning model 5, which its topology models of 8-GPU MI300X nodes select
// (src/graph/rome_models.cc, "tuning=5"), in place of NCCL's refinements (src/graph/tuning.cc):
// per-hop latencies [NVLink (xGMI), PCI, network][tree, ring][protocol], bandwidth ratios [up to two
// nodes, more][tree, ring][protocol], and bandwidth corrections by log2(bytes / 64) up to 4 GiB and
// beyond, tree on any node count, ring between nodes only. LL128 is off (0) on CDNA3.
constexpr double kRcclHwLat[3][2][3] = {
    {{0.9, 0, 2.3}, {0.8, 0, 2.1}}, {{2.2, 2.2, 5.7}, {2.2, 2.2, 5.7}}, {{10.5, 0, 25.0}, {9.5, 0, 320.0}}};
constexpr double kRcclBwRatio[2][2][3] = {{{0.06, 0, 0.11}, {0.08, 0, 1.0}}, {{0.06, 0, 0.59}, {0.08, 0, 1.0}}};
constexpr double kRcclTreeCorrection[3][27] = {
    {.1, .1, .1, .1, .1, .1, 1, 1, 1, 1, 1, .6, 1, .9, 1, 1, .1, .1, .1, .1, .1, .1, .1, .1, .1, .1, .1},
    {0},
    {.1, .1, .1, .1, .1, .1, .1, .1, .1, .1, .1, .1, .1, .1, .1, .7, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, .8}};
constexpr double kRcclRingCorrection[3][27] = {
    {.1, .1, .1, .1, .1, .1, .1, .1, .1, .1, .1, 1, .2, 1, .4, .4, .1, .2, .2, .1, .1, .1, .1, .1, .1, .1, .1},
    {0},
    {.1, .1, .1, .1, .1, .1, .1, .1, .1, .1, .1, .1, .1, .1, .1, .1, .1, .1, .1, .1, .1, .1, .1, .8, 1, 1, 1}};
constexpr double kRcclNetOverheadUs = 2.0;  // getNetOverhead on AMD x86 (MI300X nodes' EPYC hosts)
// Tree bandwidth corrections by log2(bytes / 64), 64 B to 256 MiB.
constexpr double kTreeCorrection[3][23] = {
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9}};
constexpr double kNetOverheadUs = 1.0;  // getNetOverhead on Intel x86
constexpr double kPciBw = 12.0;         // PCI_BW
// Per-thread work before NCCL adds a channel (NCCL_{LL,LL128,SIMPLE}_THREAD_THRESHOLD).
constexpr double kThreadThreshold[3] = {8, 8, 64};
constexpr int kNcclSteps = 8;
// buffSizes: LL lines, LL128 elements, Simple 4 MiB.
constexpr double kBuffSize[3] = {8.0 * 512 * 8 * 16, 120.0 * 640 * 8 * 8, 4194304.0};

// The speeds NCCL's search tries for Hopper's graphs (search.cc sm90SpeedArrayIntra / Inter), GB/s
// per channel, fastest first: inside one node, and with NICs.
constexpr double kSm90SpeedIntra[] = {60.0, 50.0, 40.0, 30.0, 24.0, 20.0, 15.0, 12.0, 11.0, 6.0, 3.0};
constexpr double kSm90SpeedInter[] = {48.0, 45.0, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5,
                                      15.0, 12.0, 6.0,  3.0,  2.4,  1.2,  0.24, 0.12};
// Blackwell's (sm100SpeedArrayIntra / Inter, NCCL 2.30.7).
constexpr double kSm100SpeedIntra[] = {90.0, 80.0, 70.0, 60.0, 50.0, 45.0,
                                       40.0, 30.0, 24.0, 20.0, 19.0, 18.0};
constexpr double kSm100SpeedInter[] = {96.0, 86.0, 80.0, 48.0, 45.1, 42.0, 40.0, 30.0, 24.0, 22.0,
                                       20.0, 17.5, 15.0, 12.0, 6.0,  3.0,  2.4,  1.2,  0.24, 0.12};
constexpr int kNcclMaxNvlsArity = 32;  // NCCL_MAX_NVLS_ARITY

int log2i(double n) {
  int l = 0;
  auto v = static_cast<std::uint64_t>(std::max(0.0, n));
  while (v >>= 1) ++l;
  return l;
}

// A graph's bwIntra: a ring between nodes runs at the network's speed inside nodes too, a tree's
// search raises it up to twice the network's (search.cc).
double graph_bw_intra(const NcclSystem& s, NcclAlgorithm a) {
  if (s.nodes <= 1) return s.bw_intra;
  if (a == NcclAlgorithm::ring) return std::min(s.bw_intra, s.bw_inter);
  if (a == NcclAlgorithm::tree) return std::min(s.bw_intra, 2 * s.bw_inter);
  return s.bw_intra;
}

// NCCL 2.23.4's PAT row (src/graph/tuning.cc): the tree graph's channels and speed (bwIntra up to two
// nodes, bwInter beyond) x 0.85, not converted to an algorithm bandwidth; a latency of 8 us, plus
// log2(nodes) x the tree's network latency (14 us with Simple at one GPU per node) / 3.5, plus 2.8 us
// per rank. Enabled (ncclPatEnable) with one GPU per node only.
NcclCost pat_cost(const NcclSystem& s, int graph_channels) {
  if (!s.pat || s.ranks < 2 || s.nodes != s.ranks || s.arch == GpuArch::cdna3) return {};
  double bw = s.nodes > 2 ? s.bw_inter : graph_bw_intra(s, NcclAlgorithm::tree);
  bw *= static_cast<double>(s.channels) / graph_channels;
  NcclCost cost;
  cost.bandwidth_GBps = graph_channels * bw * kPatBandwidthShare;
  cost.latency_us = 8 + log2i(s.nodes) * (kTreeNetLat2234[static_cast<int>(Protocol::simple)] / 3.5) + s.ranks * 2.8;
  return cost;
}

// The row of NCCL's per-generation tables. RCCL's tables stop at Hopper's row, which a CDNA3 GPU
// (compute capability 9.4 as HIP reports gfx942) reads.
int arch_index(GpuArch a) {
  switch (a) {
    case GpuArch::volta:
      return 0;
    case GpuArch::ampere:
      return 1;
    case GpuArch::hopper:
    case GpuArch::cdna3:
      return 2;
    case GpuArch::blackwell:
      return 3;
  }
  return 2;
}

// NCCL's sm90 rules (LL128 up to PXN, the simpler tree's discount) hold on Hopper and later.
bool sm90_or_later(GpuArch a) {
  return a == GpuArch::hopper || a == GpuArch::blackwell;
}

int ix(NcclAlgorithm a) {
  return static_cast<int>(a);
}
int ix(Protocol p) {
  return static_cast<int>(p);
}
int ix(NcclCollective c) {
  return static_cast<int>(c);
}

}  // namespace

bool nccl_gpu_multicast(GpuArch arch) {
  return arch == GpuArch::hopper || arch == GpuArch::blackwell;
}

bool nccl_nvls_supported(GpuArch arch, bool nvswitch, int smallest_node_gpus) {
  return nccl_placement(NcclAlgorithm::nvls, 1, {nvswitch, nccl_gpu_multicast(arch), smallest_node_gpus}) ==
         NcclPlacement::runs;
}

double nccl_nvlink_GBps(GpuArch arch, double link_GBps) {
  const NvlinkFigure f = nccl_nvlink_figure(arch);
  return link_GBps * f.nccl_GBps / f.link_GBps;
}

DomainGraph nccl_domain_graph(double nvlink_GBps, int nics, double nic_GBps) {
  // 2.26.2's sm100SpeedArrayInter is sm90's (kSm90SpeedInter); 2.30.7's starts higher.
  DomainGraph best;
  for (double speed : kSm90SpeedInter) {
    if (speed > nic_GBps) continue;  // above the NIC's path (maxBw): not tried
    if (best.channels > 0 && speed / best.speed <= .49) break;
    const int per_nic = static_cast<int>(std::floor(nic_GBps / speed));
    const int channels = std::min({kNcclMaxChannels, nics * per_nic, static_cast<int>(std::floor(nvlink_GBps / speed))});
    if (channels * speed > best.channels * best.speed) best = {channels, speed};
    if (best.channels * best.speed >= nvlink_GBps) break;
  }
  return best;
}

int nccl_nvls_channels(GpuArch arch, int nodes) {
  // src/transport/nvls.cc (NCCL 2.30.7): 16 on sm90; on sm100 32 across nodes, 24 inside one.
  if (arch == GpuArch::blackwell) return nodes > 1 ? 32 : 24;
  return 16;
}

double nccl_blackwell_nvls_port_share(const NvlsGraph& g, double port_GBps) {
  constexpr double kBlackwellNvlsEfficiency = 0.74;  // tuning.cc nvlsEfficiency, NCCL 2.30.7
  if (g.heads < 1 || port_GBps <= 0) return 0;
  return kBlackwellNvlsEfficiency * (g.heads + 1) * g.bw_intra / port_GBps;
}

NvlsGraph nccl_nvls_graph(int gpus_per_node, int nodes, int nics_per_node, double nvlink_GBps,
                          double nic_GBps, GpuArch arch) {
  NvlsGraph g;
  const bool one_node = nodes <= 1;
  g.heads = std::min(kNcclMaxNvlsArity, one_node ? gpus_per_node : std::min(nics_per_node, gpus_per_node));
  if (g.heads < 1) return {};
  const bool sm100 = arch == GpuArch::blackwell;
  const double* speeds = sm100 ? (one_node ? kSm100SpeedIntra : kSm100SpeedInter)
                               : (one_node ? kSm90SpeedIntra : kSm90SpeedInter);
  const int count =
      static_cast<int>(sm100 ? (one_node ? std::size(kSm100SpeedIntra) : std::size(kSm100SpeedInter))
                             : (one_node ? std::size(kSm90SpeedIntra) : std::size(kSm90SpeedInter)));
  const double nic = one_node ? speeds[0] : nic_GBps;
  int i = 0;
  while (i < count - 1 && ((g.heads + 1) * speeds[i] > nvlink_GBps || speeds[i] > nic)) ++i;
  g.bw_intra = g.bw_inter = speeds[i];
  while (i > 0 && g.bw_inter < 2 * g.bw_intra && speeds[i - 1] <= nic) g.bw_inter = speeds[--i];
  return g;
}

const char* nccl_collective_name(NcclCollective c) {
  switch (c) {
    case NcclCollective::all_reduce:
      return "all_reduce";
    case NcclCollective::all_gather:
      return "all_gather";
    case NcclCollective::reduce_scatter:
      return "reduce_scatter";
    case NcclCollective::broadcast:
      return "broadcast";
  }
  return "?";
}

namespace {

// What NCCL's refinements of a ring's or tree's bus bandwidth (tuning.cc) read besides the protocol.
struct BusRefinement {
  int channels, cc, index2, nodes;
  bool few_ranks_a_node;  // LL128 rings at under two ranks a node run at 0.7, others at 0.92
  double ll_max_bw;
};

// NCCL's per-algorithm and per-protocol caps and efficiencies on a graph's bus bandwidth.
double nccl_refined_bus(double bus, NcclAlgorithm a, Protocol p, const BusRefinement& r) {
  if (a == NcclAlgorithm::ring && p == Protocol::ll) bus = std::min(r.ll_max_bw, bus * .5);
  if (a == NcclAlgorithm::ring && p == Protocol::ll128)
    bus = std::min(bus * (r.few_ranks_a_node ? 0.7 : 0.92), r.channels * kPerChMaxRingLL128Bw[r.cc][r.index2]);
  if (a == NcclAlgorithm::tree) bus = std::min(bus * .92, r.channels * kPerChMaxTreeBw[r.cc][r.index2]);
  if (a == NcclAlgorithm::tree && p == Protocol::ll) bus = std::min(bus * 1.0 / 3.8, r.ll_max_bw);
  if (a == NcclAlgorithm::tree && p == Protocol::ll128)
    bus = std::min(bus * (r.nodes == 1 ? 7.0 / 9.0 : 120.0 / 128.0),
                   r.channels * kPerChMaxTreeLL128Bw[r.cc][r.index2]);
  return bus;
}

}  // namespace

NcclTuning::NcclTuning(const NcclSystem& s) : system_(s) {
  const int nodes = std::max(1, s.nodes), ranks = std::max(1, s.ranks);
  const double ppn = static_cast<double>(ranks) / nodes;
  const int cc = arch_index(s.arch);
  const int index2 = nodes <= 2 ? nodes - 1 : 2;
  const int index1 = nodes == 1 ? cc : 0;  // beyond one node NCCL looks at the CPU: Intel
  const int graph_channels = s.graph_channels > 0 ? s.graph_channels : std::max(1, s.channels);
  const double ll_max_bw = kLlMaxBw[index1][index2];
  const int intra_hw = s.intra_nvlink ? kNvlink : kPci;
  const bool rccl = s.arch == GpuArch::cdna3;
  for (NcclCollective coll : {NcclCollective::all_reduce, NcclCollective::all_gather,
                              NcclCollective::reduce_scatter, NcclCollective::broadcast}) {
    const bool all_reduce = coll == NcclCollective::all_reduce;
    const bool gather_scatter = coll == NcclCollective::all_gather || coll == NcclCollective::reduce_scatter;
    const int nsteps = all_reduce ? 2 * (ranks - 1) : gather_scatter ? ranks - 1 : ranks;
    const int inter_steps = all_reduce ? (nodes > 1 ? 2 * nodes : 0) : gather_scatter ? nodes - 1 : nodes;
    for (NcclAlgorithm a : kNcclAlgorithms) {
      if (coll == NcclCollective::broadcast && a != NcclAlgorithm::ring) continue;
      if (gather_scatter && a == NcclAlgorithm::tree) continue;
      if (a == NcclAlgorithm::nvls_tree && gather_scatter) continue;
      if (a == NcclAlgorithm::pat) {
        if (gather_scatter) table_[ix(coll)][ix(a)][ix(Protocol::simple)] = pat_cost(s, graph_channels);
        continue;
      }
      // NCCL 2.23.4's rules for reduce-scatter and all-gather (above kTreeNetLat2234).
      const bool rules_2234 = gather_scatter && !rccl;
      const bool nvls_family = is_nvls(a);
      for (Protocol p : kProtocols) {
        if (!nccl_protocol_runs(a, p)) continue;
        // NCCL's tuning reads a graph's bwIntra up to two nodes and its bwInter beyond; a ring that
        // crosses nodes runs one speed inside and between them, and a tree's search may raise its
        // bwIntra up to twice bwInter: on two nodes a tree's bytes cross the network once each way,
        // a ring's twice. Channels: the graph's, whose count the per-channel caps below multiply.
        double bw = nodes > 2 ? s.bw_inter : graph_bw_intra(s, a);
        // NVLS and NVLS-Tree: their own graph's speeds, one channel per head.
        if (a == NcclAlgorithm::nvls) bw = std::min(s.nvls_bw_intra, s.nvls_bw_inter);
        if (a == NcclAlgorithm::nvls_tree)
          bw = std::min(s.nvls_bw_intra, nodes <= 2 ? s.nvls_bw_inter : s.nvls_bw_inter / 2);
        const int channels = nvls_family ? s.nvls_heads : graph_channels;
        if (!nvls_family) bw *= static_cast<double>(s.channels) / graph_channels;
        double bus = channels * bw;
        if (rccl) {
          // RCCL on gfx94x drops tree/Simple inside one node (ring wins it), and scales the rest by
          // its model's ratios instead of NCCL's refinements below.
          if (a == NcclAlgorithm::tree && p == Protocol::simple && nodes == 1) continue;
          if (!nvls_family) bus *= kRcclBwRatio[nodes <= 2 ? 0 : 1][ix(a)][ix(p)];
          if (a == NcclAlgorithm::ring && p == Protocol::ll && coll == NcclCollective::broadcast && nodes == 1)
            bus *= 1.65;
        }
        if (!rccl) bus = nccl_refined_bus(bus, a, p, {channels, cc, index2, nodes, ppn < 2 && !rules_2234, ll_max_bw});
        // On Hopper NCCL's search tries "a simpler tree" (search.cc: NCCL_TOPO_PATTERN_TREE in place of
        // the balanced one) when the balanced tree is not perfect, and tuning.cc takes 15 % off such a
        // tree's bandwidth. Across nodes it is what NCCL's own estimates show (NVIDIA/nccl#1453: tree
        // LL at 20.4 x 0.85 GB/s on 3 nodes of H100, and NVLS-Tree chosen over tree/LL128 at 512 KiB);
        // without it the model's choice flapped from NVLS-Tree back to tree between 64 and 256 MiB.
        // Not where NCCL found its balanced tree (2.26.2 applies the discount only then,
        // comm->maxTreePattern): across NVLink domains of several trays, whose graph fills the
        // GPUs' NVLink (nccl_domain_graph).
        if (a == NcclAlgorithm::tree && sm90_or_later(s.arch) && nodes > 1 && !s.domain_graph) bus *= .85;
        const double ratio = a == NcclAlgorithm::ring ? static_cast<double>(ranks) / nsteps
                             : nvls_family            ? (rules_2234 ? 1.0 : 5.0 / 6.0)
                                                      : .5;
        NcclCost& cost = table_[ix(coll)][ix(a)][ix(p)];
        cost.bandwidth_GBps = bus * ratio;
        const bool rccl_model = rccl && !nvls_family;
        double lat = rccl_model ? kRcclBaseLat[ix(p)] : kBaseLat[ix(a)][ix(p)];
        double intra_lat = rccl_model ? kRcclHwLat[intra_hw][ix(a)][ix(p)] : kHwLat[intra_hw][ix(a)][ix(p)];
        const double inter_lat = rccl_model                ? kRcclHwLat[kNet][ix(a)][ix(p)]
                                 : rules_2234 && ppn == 1 ? kTreeNetLat2234[ix(p)]
                                                          : kHwLat[kNet][ix(a)][ix(p)];
        if (a == NcclAlgorithm::ring) {
          if (coll == NcclCollective::broadcast) {
            lat += rccl ? kRcclHwLat[nodes == 1 ? intra_hw : kNet][ix(a)][ix(p)]
                        : kHwLat[nodes == 1 ? intra_hw : kNet][ix(a)][ix(p)];  // sameChannels
          } else {
            // Inter-node rings still launch nsteps x the network overhead.
            double net_overhead =
                nodes > 1 ? (rccl ? kRcclNetOverheadUs : kNetOverheadUs) * (p == Protocol::simple ? 3 : 1) : 0;
            intra_lat = std::max(intra_lat, net_overhead);
            lat += (nsteps - inter_steps) * intra_lat + inter_steps * inter_lat;
          }
        } else if (a == NcclAlgorithm::tree) {
          lat += 2 * ((ranks / nodes - 1) * intra_lat + log2i(nodes) * inter_lat);
        } else if (a == NcclAlgorithm::nvls) {
          lat = intra_lat + (nodes > 1 ? inter_lat : 0);
        } else {
          lat += intra_lat + 2 * log2i(nodes) * inter_lat;
        }
        cost.latency_us = lat;
        if (nccl_placement(a, nodes, {s.nvls, true, 3}) != NcclPlacement::runs) cost.bandwidth_GBps = 0;
      }
    }
  }
}

NcclCost NcclTuning::cost(NcclCollective coll, NcclAlgorithm a, Protocol p) const {
  return table_[ix(coll)][ix(a)][ix(p)];
}

bool NcclTuning::enabled(NcclCollective coll, NcclAlgorithm a, Protocol p) const {
  return cost(coll, a, p).bandwidth_GBps > 0 && (p != Protocol::ll128 || ll128_by_default());
}

// NCCL turns LL128 on by default only with NVLink inside the node and, across nodes, a NIC close
// to the GPU: up to pxb (pxn on Hopper and Blackwell) for the graph's typeInter. RCCL turns it on
// only on gfx90a (CDNA2), never on CDNA3. NCCL_PROTO=LL128 runs it anyway.
bool NcclTuning::ll128_by_default() const {
  const NcclSystem& s = system_;
  if (s.arch == GpuArch::cdna3) return false;
  return s.intra_nvlink && (s.nodes == 1 || s.gpu_nic_path <= NicPath::pxb ||
                            (sm90_or_later(s.arch) && s.gpu_nic_path <= NicPath::pxn));
}

double NcclTuning::time_us(NcclCollective coll, NcclAlgorithm a, Protocol p, double bytes) const {
  const NcclCost c = cost(coll, a, p);
  double bw = c.bandwidth_GBps, lat = c.latency_us;
  if (bw <= 0) return -1;
  const int log_size = log2i(bytes / 64);
  if (system_.arch == GpuArch::cdna3) {
    // RCCL: its model's corrections (the last entry beyond 4 GiB), no plateau term.
    const int i = std::min(log_size, 26);
    if (a == NcclAlgorithm::tree) bw *= kRcclTreeCorrection[ix(p)][i];
    if (a == NcclAlgorithm::ring && system_.nodes > 1) bw *= kRcclRingCorrection[ix(p)][i];
    return bw > 0 ? lat + bytes / (1000 * bw) : -1;
  }
  if (a == NcclAlgorithm::tree && log_size < 23) bw *= kTreeCorrection[ix(p)][log_size];
  if (a == NcclAlgorithm::ring && p == Protocol::simple && system_.nodes > 1 &&
      coll == NcclCollective::all_reduce &&
      bytes / (static_cast<double>(system_.channels) * system_.ranks) >= 64)
    lat *= system_.arch == GpuArch::volta ? 1.9 : 1.4;  // "plateau effect of ring"
  return lat + bytes / (1000 * bw);
}

int NcclTuning::max_threads(NcclAlgorithm a, Protocol p) const {
  if (is_nvls(a)) return 640;
  if (p == Protocol::ll128) return 640;
  if (p == Protocol::ll) return 512;
  if (a == NcclAlgorithm::ring) return graph_bw_intra(system_, a) * system_.channels <= kPciBw ? 256 : 512;
  return 512;
}

int NcclTuning::call_channels(NcclAlgorithm a, Protocol p, double bytes) const {
  if (is_nvls(a)) return system_.nvls_channels;
  // PAT keeps the communicator's channels (NCCL 2.23.4 sets it no thread count to shrink them by),
  // and NCCL's planner gives each at least 16 KiB of the call (scheduleCollTasksToPlan).
  if (a == NcclAlgorithm::pat)
    return std::clamp(static_cast<int>(std::ceil(bytes / 16384)), 1, system_.channels);
  int nc = system_.channels;
  const double nt = max_threads(a, p);
  double threshold = kThreadThreshold[ix(p)];
  if (a == NcclAlgorithm::ring && p == Protocol::ll) threshold *= system_.ranks;
  while (nc >= 2 && bytes < nc * nt * threshold) --nc;
  return nc;
}

NcclChoice NcclTuning::choose(NcclCollective coll, double bytes, std::optional<NcclAlgorithm> algorithm,
                              std::optional<Protocol> protocol, std::optional<int> channels) const {
  NcclChoice best;
  double best_time = -1;
  if (system_.ranks <= 1) {
    best.channels = 1;
    return best;  // NCCL runs ring / Simple on one rank
  }
  for (NcclAlgorithm a : kNcclAlgorithms) {
    if (algorithm && a != *algorithm) continue;
    for (Protocol p : kProtocols) {
      if (protocol && p != *protocol) continue;
      if (!protocol && !enabled(coll, a, p)) continue;  // forced, NCCL runs what it would not pick
      double t = time_us(coll, a, p, bytes);
      if (t < 0) continue;
      if (channels) {
        // NCCL scales the bandwidth by the channels a tuner asks for.
        const NcclCost c = cost(coll, a, p);
        const int nc = is_nvls(a) ? system_.nvls_channels : system_.channels;
        t = t - bytes / (1000 * c.bandwidth_GBps) + bytes / (1000 * c.bandwidth_GBps / nc * *channels);
      }
      if (best_time < 0 || t < best_time) {
        best_time = t;
        best.algorithm = a;
        best.protocol = p;
      }
    }
  }
  if (best_time < 0) {
    if (!algorithm && !protocol) {
      // NCCL's fallback when nothing is enabled: ring, at the ring's own bandwidth.
      best.algorithm = NcclAlgorithm::ring;
      best.protocol = Protocol::simple;
      best.channels = channels.value_or(system_.channels);
      return best;
    }
    throw std::invalid_argument(
        fmt::format("NCCL does not run {}{}{} on this system", nccl_collective_name(coll),
                    algorithm ? fmt::format(" with algorithm {}", nccl_algorithm_name(*algorithm)) : "",
                    protocol ? fmt::format(" with protocol {}", protocol_name(*protocol)) : ""));
  }
  best.predicted_us = best_time;
  best.channels = channels.value_or(call_channels(best.algorithm, best.protocol, bytes));
  return best;
}

NcclChunking nccl_chunking(const NcclSystem& s, NcclAlgorithm a, Protocol p, double bytes, int channels) {
  NcclChunking c;
  const double step = kBuffSize[ix(p)] / kNcclSteps;
  const bool simple_ring = p == Protocol::simple && a == NcclAlgorithm::ring;
  const int chunk_steps = simple_ring ? kNcclSteps / 2 : 1, slice_steps = simple_ring ? kNcclSteps / 4 : 1;
  double chunk = step * chunk_steps;
  if (p == Protocol::ll) chunk /= 2;
  if (p == Protocol::ll128) chunk = std::floor(chunk / 16) * 15;
  const double nc = std::max(1, channels);
  // NVLS and NVLS-Tree size their chunk by the operations in flight, channels x NVLS heads
  // (concurrentOps in src/enqueue.cc calcCollChunking, NCCL 2.21.5 to 2.30.7): heads, not a node's
  // GPUs, which differ on a node of more than 32 GPUs (an NVL72 rack: 32 heads of 72) and, across
  // nodes, where a node has fewer NICs than GPUs.
  const int heads = s.nvls_heads > 0 ? s.nvls_heads : s.ranks / std::max(1, s.nodes);
  const double ops = nc * std::max(1, heads);
  if (a == NcclAlgorithm::nvls) {
    chunk = kNvlsChunkSize;
    if (bytes < 64 * ops * chunk && chunk > 65536) chunk = 65536;
    if (bytes < 8 * ops * chunk && chunk > 32768) chunk = 32768;
    if (bytes < 2 * ops * chunk && chunk > 16384) chunk = 16384;
  } else if (a == NcclAlgorithm::nvls_tree) {
    chunk = s.nodes >= 4 ? 65536 : kNvlsChunkSize;
    if (bytes < 32 * ops * chunk && chunk > 262144) chunk = 262144;
    if (bytes < 16 * ops * chunk && chunk > 131072) chunk = 131072;
    if (bytes < 4 * ops * chunk && chunk > 65536) chunk = 65536;
    if (bytes < 1 * ops * chunk && chunk > 32768) chunk = 32768;
  } else if (a == NcclAlgorithm::tree && p == Protocol::ll128) {
    const double ppn = static_cast<double>(s.ranks) / std::max(1, s.nodes);
    const double steps = 1 + log2i(s.nodes) + 0.1 * ppn;
    while (bytes / (nc * chunk) < steps * 64 / ppn && chunk > 131072) chunk /= 2;
    while (bytes / (nc * chunk) < steps * 16 / ppn && chunk > 32768) chunk /= 2;
  }
  c.chunk_bytes = chunk;
  c.slices_per_chunk = chunk_steps / slice_steps;
  c.slots = kNcclSteps / slice_steps;
  return c;
}

}  // namespace aggsim
