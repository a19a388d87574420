#pragma once
// NCCL's choice of algorithm, protocol and channel count for one call, as NCCL 2.21.5 makes it
// (src/graph/tuning.cc ncclTopoTuneModel and ncclTopoGetAlgoTime, src/enqueue.cc topoGetAlgoInfo
// and getChannnelThreadInfo): a latency and a bandwidth per collective x algorithm x protocol from
// the topology NCCL found, time = latency + bytes / bandwidth, the fastest enabled pair wins, and
// small calls run on fewer channels. The constants are NCCL's; they are what NCCL believes, not
// what the hardware does (the movement's costs are ProtocolCosts, which a calibration may refit),
// so a calibration changes the simulated time but not NCCL's choice, as on a real cluster.
#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "algorithms/nccl/protocol.hpp"
#include "sim/platform/platform_spec.hpp"

namespace aggsim {

enum class NcclCollective { all_reduce, all_gather, reduce_scatter, broadcast };
const char* nccl_collective_name(NcclCollective c);  // nccl-tests' names: all_reduce, ...

// GPU generation, for NCCL's per-channel bandwidth caps and where it enables LL128: the platform's
// (sim/platform/platform_spec.hpp).
using GpuArch = GpuGeneration;

// How a GPU reaches its NIC, in NCCL's order of path types (src/graph/topo.h): through PCIe
// switches (pix, pxb), through another GPU of the node (pxn), through the CPU (phb, sys).
using NicPath = GpuNicPath;

// What NCCL's topology search reports of a communicator.
struct NcclSystem {
  int ranks = 1;
  int nodes = 1;
  bool intra_nvlink = true;  // GPUs of a node joined by NVLink (else PCIe)
  GpuArch arch = GpuArch::hopper;
  int channels = 2;                     // comm->nChannels: the ring (and tree) channels
  // The ring and tree graphs' own channels, whose count NCCL's tuning multiplies its per-channel
  // caps by: its search's (between nodes one per NIC), which connect.cc duplicates into the
  // communicator's; 0: `channels`.
  int graph_channels = 0;
  int nvls_channels = 16;               // comm->nvlsChannels: the CTAs an NVLS call runs on
  double bw_intra = 20;                 // GB/s per channel inside a node (the links' rate / channels)
  double bw_inter = 20;                 // GB/s per channel between nodes (the NICs' rate / channels)
  bool nvls = false;                    // NVLS supported (nccl_nvls_supported)
  // NCCL's NVLS graph (nccl_nvls_graph), whose channels and speeds its tuning rates NVLS and
  // NVLS-Tree by.
  int nvls_heads = 0;
  double nvls_bw_intra = 0, nvls_bw_inter = 0;
  NicPath gpu_nic_path = NicPath::pxb;  // the farthest GPU-NIC path of the communicator (typeInter)
  bool domain_graph = false;            // the ring and tree graph are nccl_domain_graph's
  // PAT may run this call (pat_for_op): NCCL 2.23.4 runs it with one GPU per node (nodes == ranks),
  // not on RCCL, and not for a reduce-scatter whose op NCCL pre-multiplies (avg).
  bool pat = true;
};

// Whether NCCL runs NVLS and NVLS-Tree (src/transport/nvls.cc ncclNvlsInit, src/graph/search.cc):
// the GPUs' multicast support, which Hopper has and earlier GPUs do not (an A100's NVSwitch does not
// reduce), a switch joining each node's GPUs, and more than two GPUs in a node.
bool nccl_nvls_supported(GpuArch arch, bool nvswitch, int smallest_node_gpus);

// NCCL's NVLS graph (src/graph/search.cc, the NVLS pattern): one channel per head, a head per GPU of
// a node (at most NCCL_MAX_NVLS_ARITY, 32) or, across nodes, per NIC with a GPU of its own; every
// channel moves each GPU's share through the switch and its head's twice, so a GPU's NVLink carries
// (heads + 1) x the channel's speed, the fastest of NCCL's search speeds that fits (each head's NIC
// too, across nodes). Its second pass raises the inter-node speed towards twice the intra-node one,
// up to what the NIC carries (on one node, where no NIC limits it, up to the fastest speed).
struct NvlsGraph {
  int heads = 0;
  double bw_intra = 0, bw_inter = 0;  // GB/s per channel
};
// `nvlink_GBps`: a GPU's NVLink rate as NCCL's topology counts it (nccl_nvlink_GBps); `nic_GBps`
// one NIC's (0 on one node).
NvlsGraph nccl_nvls_graph(int gpus_per_node, int nodes, int nics_per_node, double nvlink_GBps, double nic_GBps,
                          GpuArch arch = GpuArch::hopper);
// NCCL 2.26.2's ring and tree graph across nodes whose NVLink clique spans trays (multi-node NVLink:
// src/graph/topo.cc fuses the clique's topologies, so all its trays' NICs are in one graph):
// channels at one speed of its search (sm100SpeedArrayInter, from 48 GB/s down), each on a NIC
// (floor(NIC / speed) channels a NIC) and each through every GPU, so at most NVLink / speed of them;
// the search keeps the most channels x speed and stops once they fill a GPU's NVLink (search.cc
// ncclTopoCompute). On an NVL72 rack: 15 channels of 48 GB/s (720 GB/s of NVLink), 15 of its 72
// NICs. It does not duplicate them (ncclTopoDupChannels: Blackwell, under 50 GB/s, over 4 channels);
// the communicator runs them twice (connect.cc): 30 channels. `nvlink_GBps`: a GPU's NVLink rate
// as NCCL's topology counts it (nccl_nvlink_GBps).
struct DomainGraph {
  int channels = 0;
  double speed = 0;  // GB/s per channel
};
DomainGraph nccl_domain_graph(double nvlink_GBps, int nics, double nic_GBps);
// NVLS's CTAs (comm->nvlsChannels): 16 on Hopper, on Blackwell 32 across nodes and 24 inside one.
int nccl_nvls_channels(GpuArch arch, int nodes);
// The share of a GPU's NVLink port rate (`port_GBps`, each way) that NCCL's tuning credits NVLS with
// on Blackwell: nvlsEfficiency (0.74) of what its NVLS graph loads a head GPU's port with, (heads + 1)
// channels at the graph's speed. On one node of 8 B200 that is 80 GB/s a channel, 0.59 of the port;
// on an NVL72 rack NCCL_MAX_NVLS_ARITY keeps 32 heads of 72 GPUs and 33 channels must fit one port,
// so 20 GB/s a channel, 0.54. (Hopper keeps kHopperNvlsEfficiency, which this rule meets within 3 %.)
double nccl_blackwell_nvls_port_share(const NvlsGraph& graph, double port_GBps);
// Whether the GPU's NVSwitch can reduce and multicast its memory (NVLS): Hopper and Blackwell.
bool nccl_gpu_multicast(GpuArch arch);
// A GPU's NVLink rate as NCCL's topology counts it: Hopper's 25 GB/s links at SM90_NVLINK_BW, 20.6.
double nccl_nvlink_GBps(GpuArch arch, double link_GBps);

struct NcclCost {
  double latency_us = 0;
  double bandwidth_GBps = 0;  // 0: not enabled
};

struct NcclChoice {
  NcclAlgorithm algorithm = NcclAlgorithm::ring;
  Protocol protocol = Protocol::simple;
  int channels = 1;
  double predicted_us = 0;  // NCCL's own estimate of the call's time
};

class NcclTuning {
 public:
  explicit NcclTuning(const NcclSystem& system);
  const NcclSystem& system() const { return system_; }
  // The table entry (bandwidth 0 when NCCL would not use the pair for this collective).
  NcclCost cost(NcclCollective coll, NcclAlgorithm a, Protocol p) const;
  // NCCL's estimate for `bytes` (the buffer size nccl-tests prints), -1 when disabled.
  double time_us(NcclCollective coll, NcclAlgorithm a, Protocol p, double bytes) const;
  // The call's choice; `algorithm` / `protocol` force one (NCCL_ALGO / NCCL_PROTO), `channels`
  // forces the channel count. Throws std::invalid_argument when the forced pair is not available.
  NcclChoice choose(NcclCollective coll, double bytes, std::optional<NcclAlgorithm> algorithm = {},
                    std::optional<Protocol> protocol = {}, std::optional<int> channels = {}) const;
  // Channels NCCL runs a call of `bytes` on (fewer for small calls).
  int call_channels(NcclAlgorithm a, Protocol p, double bytes) const;
  // Whether NCCL's own choice may take the pair (a forced protocol may run what it would not pick).
  bool enabled(NcclCollective coll, NcclAlgorithm a, Protocol p) const;

 private:
  bool ll128_by_default() const;
  int max_threads(NcclAlgorithm a, Protocol p) const;
  NcclSystem system_;
  std::array<std::array<std::array<NcclCost, 3>, 5>, 4> table_{};  // [coll][algorithm][protocol]
};

// NCCL's loop geometry for a call: chunk size (bytes of data per chunk), slices per chunk (Simple
// ring pipelines each chunk in 2 slices), and the FIFO depth in slices per connection.
struct NcclChunking {
  double chunk_bytes = 0;
  int slices_per_chunk = 1;
  int slots = 8;  // NCCL_STEPS / sliceSteps pieces in flight per connection
};
NcclChunking nccl_chunking(const NcclSystem& system, NcclAlgorithm a, Protocol p, double bytes, int channels);

// NCCL's maximum channels per communicator (MAXCHANNELS in 2.21.5).
constexpr int kNcclMaxChannels = 32;

// NCCL's NVLS chunk (nvlsChunkSize, 128 KiB), which calcCollChunking shrinks for small calls.
constexpr double kNvlsChunkSize = 128 * 1024;

}  // namespace aggsim
