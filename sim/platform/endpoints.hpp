#pragma once
// Fabric endpoints, shared by every generator. An endpoint ("node") is either one host
// (gpus_per_node = 1, named host-N) or a machine with several GPUs: a zone of hosts
// node-N-gpu-G, each with a private full-duplex link of intra_bandwidth / intra_latency (an
// NVLink/NVSwitch port), behind a gateway router whose zero-latency full-duplex NIC link(s) of
// nic_bandwidth join the fabric. A transfer between two GPUs of one node crosses two intra
// links; between nodes it crosses intra up, NIC up, the fabric's route, NIC down, intra down.
// With nics_per_node N > 1 (rail-optimised nodes) GPU g's traffic between nodes leaves and enters
// through NIC g mod N, each NIC its own link of nic_bandwidth, and the fabric is N parallel planes
// (one per NIC), modelled as one fabric whose links carry N x bandwidth. A single-GPU node given a
// nic_bandwidth (or several NICs) is such a zone too, with its one host named host-N.
// Every GPU host carries the node property (kNodeProperty), its NIC (kNicProperty) and, on nodes
// of several GPUs, the intra-node link class (kIntraLinkProperty) and, when its GPUs sit on a
// switch that reduces, kNvswitchProperty, so collective models see the machine as it is built.
#include <cstdint>
#include <functional>
#include <simgrid/s4u.hpp>
#include <string>
#include <utility>
#include <vector>

#include "sim/core/params.hpp"
#include "sim/platform/platform_spec.hpp"

namespace aggsim {

namespace sg4 = simgrid::s4u;

// Bounds on generated platforms with gpus_per_node > 1 (see node_shape).
constexpr std::int64_t kMaxMultiGpuNodes = 8192;
constexpr std::int64_t kMaxMultiGpuHosts = 65536;
// Hosts a generated platform may hold beyond its ranks: at most this many per rank, or
// kMinGeneratedHosts in all whatever the ranks (each host costs memory and build time).
constexpr std::int64_t kGeneratedHostsPerRank = 16;
constexpr std::int64_t kMinGeneratedHosts = 65536;

// The keys every generator takes: nodes | hosts, gpus_per_node, bandwidth, latency, speed, intra_*,
// nic_bandwidth. `fabric_link_help` names the links bandwidth/latency apply to.
std::vector<ParamSpec> endpoint_params(const std::string& fabric_link_help);

// Decodes the keys of endpoint_params(): the scenario loader's one reading of them. Throws
// std::invalid_argument naming the key when nodes and hosts are both given or both missing, when
// hosts is not a multiple of gpus_per_node, when a multi-GPU platform is beyond kMaxMultiGpuNodes /
// kMaxMultiGpuHosts, or when nvswitch is asked of single-GPU nodes.
NodeShape node_shape(const Params& params);

// Writes the facts of GPU `gpu` of `node` as its host's properties (host_facts.hpp): the node and
// NIC on nodes with a NIC, the intra-node link on nodes of several GPUs, and the switch, GPU-NIC
// path and GPU generation when the shape says them.
void write_gpu_properties(sg4::Host* host, const NodeShape& shape, std::int64_t node, std::int64_t gpu);

// Name of the host of `gpu` on `node`: host-N with one GPU per node, else node-N-gpu-G (both sort
// naturally in rank order).
std::string endpoint_host_name(const NodeShape& shape, std::int64_t node, std::int64_t gpu);

// SimGrid 3.32 checks every new link and host name against every zone below the platform's root,
// and seals a zone by a walk over every host below the root: with one zone per multi-GPU node a
// platform built below the root costs nodes x hosts (8,192 nodes of 8 GPUs as a cluster: 24 s, as a
// fat tree with 8 NICs a node: minutes). So a generator makes the root first (create_platform_root),
// builds its fabric apart from it, where those walks find nothing, and joins the fabric to the root
// once it is built (join_fabric). SimGrid gives its models to the root only: a zone built apart
// takes them with copy_models.
sg4::NetZone* create_platform_root();
void copy_models(sg4::NetZone* zone, const sg4::NetZone* from);
void join_fabric(sg4::NetZone* fabric);

// Builds the endpoints of one generated fabric. Node zones are filled while detached, with the
// fabric's models, and joined to the fabric by attach(), which the generator calls before it joins
// the fabric to the root.
struct ResolvedOverrides;  // sim/platform/platform_overrides.hpp

class EndpointBuilder {
 public:
  // `overrides` (may be null) gives hosts their own speed, nodes their own NIC and GPUs their own
  // intra-node link; it must outlive the builder.
  explicit EndpointBuilder(const NodeShape& shape, const ResolvedOverrides* overrides = nullptr)
      : shape_(shape), overrides_(overrides) {}
  // Creates endpoint `node` for `fabric` and returns {netpoint, gateway} as SimGrid's cluster
  // builders want them (gateway is null for a plain host). With nvlink_domain > 1 the endpoints are
  // the shape's NVLink domains: one zone each, its nodes' GPUs on one switch, each node's own NICs.
  std::pair<simgrid::kernel::routing::NetPoint*, simgrid::kernel::routing::NetPoint*> create(
      sg4::NetZone* fabric, std::int64_t node);
  // Callbacks for sg4::create_{fatTree,torus,dragonfly}_zone: leaf i < endpoints() is endpoint i; leaves
  // beyond (a tree or dragonfly with more ports than nodes) get an idle router named
  // `<spare_prefix>-i`, which no rank ever uses. The builder must outlive the zone's creation.
  sg4::ClusterCallbacks callbacks(const std::string& spare_prefix);
  // Joins and seals the node zones made so far.
  void attach();

 private:
  NodeShape shape_;
  const ResolvedOverrides* overrides_;
  // The node zone's hosts, links and routes: a star (one NIC) or, with several NICs, a full zone
  // whose routes send each GPU's traffic through its own NIC.
  void fill_star_node(sg4::NetZone* zone, simgrid::kernel::routing::NetPoint* gateway, std::int64_t node);
  // With nvlink_domain > 1 one zone holds `node_count` nodes from `first_node` (an NVLink domain).
  void fill_rail_node(sg4::NetZone* zone, simgrid::kernel::routing::NetPoint* gateway, std::int64_t first_node,
                      std::int64_t node_count);
  // intra_link xgmi: a full mesh, one link per GPU pair, each GPU's own link to its NIC
  // (sim/platform/xgmi_mesh.cpp).
  void fill_mesh_node(sg4::NetZone* zone, simgrid::kernel::routing::NetPoint* gateway, std::int64_t node);
  sg4::Host* create_gpu(sg4::NetZone* zone, std::int64_t node, std::int64_t gpu);
  sg4::Link* gpu_link(sg4::NetZone* zone, const sg4::Host* host, std::int64_t node, std::int64_t gpu);
  double nic_bandwidth(std::int64_t node) const;

  std::vector<std::pair<sg4::NetZone*, sg4::NetZone*>> detached_;  // {node zone, its fabric}
};

}  // namespace aggsim
