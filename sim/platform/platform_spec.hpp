#pragma once
// Which platform a scenario runs on, decoded once by the scenario loader into typed values: a
// SimGrid XML file, or a generator with its node shape (GPUs, NICs, links inside and between
// nodes, GPU generation, NVLink domain). The generators build from the shape, the per-host facts of
// a built platform (sim/platform/host_facts.hpp) are what NCCL's model and the calibration read.
#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sim/core/params.hpp"

namespace aggsim {

struct TopologyInfo;       // sim/platform/topology.hpp
struct ResolvedOverrides;  // sim/platform/platform_overrides.hpp

// The names of an enum's values, in declaration order: one table per enum, so a name is written,
// listed and parsed from one place.
template <class E, std::size_t N>
struct EnumNames {
  std::array<const char*, N> names;
  const char* name(E value) const { return names[static_cast<std::size_t>(value)]; }
  std::optional<E> find(std::string_view text) const {
    for (std::size_t i = 0; i < N; ++i)
      if (text == names[i]) return static_cast<E>(i);
    return std::nullopt;
  }
  std::vector<std::string> list() const { return {names.begin(), names.end()}; }
  // " | "-joined, as messages and the key reference list them.
  std::string joined() const {
    std::string out;
    for (const char* n : names) out += (out.empty() ? "" : " | ") + std::string(n);
    return out;
  }
  // Throws std::invalid_argument("unknown <what> 'x' (a | b | c)").
  E parse(const std::string& text, const char* what) const {
    if (auto v = find(text)) return *v;
    throw std::invalid_argument("unknown " + std::string(what) + " '" + text + "' (" + joined() + ")");
  }
};

// The fabric between nodes (`platform.fabric`, or an XML platform's root-zone property
// aggsim_fabric): what `network: auto` models the links between nodes as.
enum class Fabric { infiniband, roce, ethernet };
inline constexpr EnumNames<Fabric, 3> kFabricNames{{"infiniband", "roce", "ethernet"}};
const char* fabric_name(Fabric fabric);
// The names parse_fabric accepts, in the order messages and the key reference list them.
std::vector<std::string> fabric_names();
// Throws std::invalid_argument naming the accepted values.
Fabric parse_fabric(const std::string& name);

// What the GPUs of a node talk over: NVLink (through a switch), PCIe, or AMD's xGMI (a link between
// every pair of GPUs, no switch).
enum class IntraLink { nvlink, pcie, xgmi };
inline constexpr EnumNames<IntraLink, 3> kIntraLinkNames{{"nvlink", "pcie", "xgmi"}};

// The GPU generation, whose constants NCCL's (or RCCL's) tuning follows.
enum class GpuGeneration { volta, ampere, hopper, blackwell, cdna3 };
inline constexpr EnumNames<GpuGeneration, 5> kGpuNames{{"volta", "ampere", "hopper", "blackwell", "cdna3"}};

// What one NVLink of the generation carries each way as NCCL's topology counts it, over the link's
// rate (src/graph/topo.h, NCCL 2.30.7): SM70_NVLINK_BW and SM80_NVLINK_BW 20 and SM90_NVLINK_BW 20.6 GB/s
// of a 25 GB/s link, SM100_NVLINK_BW 40.1 of a 50 GB/s NVLink 5 link. NCCL's graphs (nccl_nvlink_GBps)
// and the named systems' `nvlink_efficiency` both read it.
struct NvlinkFigure {
  double nccl_GBps, link_GBps;
};
inline constexpr NvlinkFigure nccl_nvlink_figure(GpuGeneration g) {
  if (g == GpuGeneration::blackwell) return {40.1, 50.0};
  return {g == GpuGeneration::hopper ? 20.6 : 20.0, 25.0};
}

// How a GPU reaches its NIC, in NCCL's path names, nearest first: through PCIe switches (pix, pxb),
// through another GPU of the node (pxn), through the CPU (phb, sys).
enum class GpuNicPath { pix, pxb, pxn, phb, sys };
inline constexpr EnumNames<GpuNicPath, 5> kGpuNicPathNames{{"pix", "pxb", "pxn", "phb", "sys"}};

// A generated platform's nodes, decoded once from the generator's keys (node_shape,
// sim/platform/endpoints.hpp). A node is one host (gpus_per_node 1) or a machine of several GPUs;
// an NVLink domain is `nvlink_domain` consecutive nodes whose GPUs share one switch fabric.
struct NodeShape {
  std::int64_t nodes = 0;          // nodes (machines, trays)
  std::int64_t gpus_per_node = 1;  // hosts per node
  std::int64_t nics_per_node = 1;  // GPU g uses NIC g mod nics_per_node of its node
  bool sized_by_hosts = false;     // the size was given as `hosts` rather than `nodes`
  double speed = 0;
  double bandwidth = 0;  // fabric links: the `bandwidth` key x the NICs of an endpoint (a plane each)
  double latency = 0;
  double intra_bandwidth = 0;  // a GPU's NVLink port: its signalling rate, as the data sheets give it
  double intra_latency = 0;
  // The share of intra_bandwidth that NVLink carries as data (intra_link nvlink): the GPUs' links
  // are built at intra_bandwidth x nvlink_efficiency; NCCL's model still sees the port's rate.
  double nvlink_efficiency = 1;
  double xgmi_bandwidth = 0;  // intra_link xgmi: each link between two GPUs of a node, per direction
  double nic_bandwidth = 0;  // each NIC
  bool has_nic = false;      // the node is a zone with NIC link(s) (always with several GPUs)
  bool nvswitch = false;     // the node's GPUs sit on a switch that reduces (NVLS)
  IntraLink intra_link = IntraLink::nvlink;
  std::optional<GpuNicPath> gpu_nic_path;  // none: not given (NCCL's pxb)
  std::optional<GpuGeneration> gpu;        // none: not given (the algorithm's own default)
  std::int64_t nvlink_domain = 1;          // nodes per NVLink domain
  std::int64_t hosts() const { return nodes * gpus_per_node; }
  // The fabric's endpoints: one per NVLink domain (a node when the domain is one node).
  std::int64_t endpoints() const { return nodes / nvlink_domain; }
  std::int64_t gpus_per_endpoint() const { return gpus_per_node * nvlink_domain; }
  // What a GPU's link inside its node carries, from its port rate (intra_bandwidth or an override).
  double intra_link_rate(double port) const {
    return intra_link == IntraLink::nvlink ? port * nvlink_efficiency : port;
  }
};

// A generator's own fabric, decoded once with the node shape from the generator's keys
// (TopologyInfo::decode): the member of the platform's topology is set, the others stay empty.
struct FatTreeShape {
  std::int64_t levels = 2;
  std::vector<std::int64_t> down, up, link_count;  // by level from the leaves
};
struct TorusShape {
  std::vector<std::int64_t> dimensions;
};
struct DragonflyShape {
  std::int64_t groups = 1, chassis = 1, routers = 1, nodes_per_router = 1;
  std::int64_t group_links = 1, chassis_links = 1, router_links = 1;
  std::int64_t slots() const { return groups * chassis * routers * nodes_per_router; }
};
struct FabricShape {
  FatTreeShape fat_tree;
  TorusShape torus;
  DragonflyShape dragonfly;
  std::optional<double> backbone_bandwidth;  // cluster's shared backbone, if any
  double backbone_latency = 0;
};

// One entry of `platform.overrides`: the hosts or nodes it selects and the values it gives them
// (keys of override_param_specs(), sim/platform/platform_overrides.hpp). Later entries win.
struct PlatformOverride {
  enum class Selector { hosts, nodes };
  Selector selector = Selector::hosts;
  // As given: host names, each possibly with [a-b,c] ranges ("node-3-gpu-[0-7]"), or node ranges
  // ("0-3", "7").
  std::vector<std::string> items;
  Params values;
};

struct PlatformSpec {
  std::string file;      // SimGrid platform XML (as found on disk); empty when generated
  std::string topology;  // generator name (cluster, fat_tree, torus, dragonfly); empty for a file
  const TopologyInfo* generator = nullptr;  // the table entry of `topology`; null for a file
  std::string system;                       // the named system the values came from, if any
  Params params;                            // the generator's parameters as given (resolved.yaml)
  NodeShape shape;                          // the same, decoded (generated platforms only)
  FabricShape fabric_shape;                 // the generator's own keys, decoded
  std::vector<PlatformOverride> overrides;  // generated platforms only
  // The overrides resolved against the shape (by the loader); null: none.
  std::shared_ptr<const ResolvedOverrides> resolved_overrides;
  Fabric fabric = Fabric::infiniband;       // resolved: the key, else the XML's property, else infiniband
};

}  // namespace aggsim
