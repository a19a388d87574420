#pragma once
// Builds the simulated platform (from XML or a generator) and maps ranks to hosts.
#include <simgrid/s4u.hpp>
#include <string>
#include <vector>

#include "sim/api/rank_layout.hpp"
#include "sim/platform/platform_spec.hpp"

namespace aggsim {

namespace sg4 = simgrid::s4u;

// The fabric an XML platform declares with the aggsim_fabric property of its root zone (or
// cluster), infiniband when it declares none. Throws InputError("file:line: ...") on another value.
Fabric xml_fabric(const std::string& file);
// Whether some <prop> of the platform file sets property `id` to `value`: what can be known of a
// host property before the platform is built (which hosts the ranks land on is known only then).
bool xml_sets_property(const std::string& file, const std::string& id, const std::string& value);

// Loads `spec` into the engine. Malformed XML, unknown topologies and impossible parameters throw
// InputError naming the file and line (or the parameter).
void build_platform(const PlatformSpec& spec, sg4::Engine& engine);

// True when SimGrid's network model is ns-3 (set by the network preset or the user's --cfg).
bool ns3_network_model();

// All hosts of the platform in natural name order (natural_less, sim/core/strings.hpp).
std::vector<sg4::Host*> hosts_in_natural_order(const sg4::Engine& engine);

// Up to this many ranks every ordered pair of rank hosts is checked for a route; beyond it (p^2
// route look-ups would cost more than many simulations), every rank to and from rank 0 and to
// and from its successor.
constexpr std::size_t kAllPairsRouteCheck = 256;

// Throws InputError naming the two hosts when some rank could not send to another (SimGrid would
// abort the process at the first such message). For XML platforms; generators build connected ones.
void check_rank_routes(const std::vector<sg4::Host*>& rank_hosts, const std::string& platform_file);

// Host property naming the physical node a host belongs to (several GPUs of one machine share a
// node). Hosts without it are nodes of their own.
constexpr const char* kNodeProperty = "aggsim_node";
// Host property: the index of the NIC this GPU's traffic to other nodes leaves through (0 when
// absent). Its node has as many NICs as distinct values among its hosts.
constexpr const char* kNicProperty = "aggsim_nic";
// Host property: what the GPUs of this host's node talk over, `nvlink` (the default) or `pcie`.
constexpr const char* kIntraLinkProperty = "aggsim_intra_link";
// Host property, `true` when the GPUs of this host's node sit on a switch that reduces (NVSwitch
// with NVLS); absent or `false` otherwise.
constexpr const char* kNvswitchProperty = "aggsim_nvswitch";
// Host property: how this GPU reaches its NIC, in NCCL's path names: pix | pxb (PCIe switches, the
// default), pxn (through another GPU of the node), phb | sys (through the CPU). NCCL uses LL128
// between nodes only up to pxb (pxn on Hopper).
constexpr const char* kGpuNicPathProperty = "aggsim_gpu_nic_path";
// Its values (and those of platform.gpu_nic_path), nearest first.
inline const std::vector<std::string> kGpuNicPaths = {"pix", "pxb", "pxn", "phb", "sys"};
// Property of the platform's root zone: the fabric between nodes, infiniband | roce | ethernet.
constexpr const char* kFabricProperty = "aggsim_fabric";

// Node of each rank from the hosts' node property; nodes are numbered in order of first rank.
RankLayout layout_of(const std::vector<sg4::Host*>& rank_hosts);

}  // namespace aggsim
