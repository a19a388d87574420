#pragma once
// What a built platform says of each GPU host, typed: its node, its NIC, what its node's GPUs talk
// over, whether they sit on a switch that reduces, how it reaches its NIC, its GPU generation and
// its NVLink domain. A host carries these as SimGrid properties (the generators write them, an XML
// platform declares them); they are parsed here, once per host, and every reader (NCCL's view, the
// network factors, the rank layout, the calibration) reads the typed facts.
#include <optional>
#include <simgrid/s4u.hpp>
#include <string>

#include "sim/platform/platform_spec.hpp"

namespace aggsim {

namespace sg4 = simgrid::s4u;

// Host property naming the physical node a host belongs to (several GPUs of one machine share a
// node). Hosts without it are nodes of their own.
constexpr const char* kNodeProperty = "aggsim_node";
// Host property: the index of the NIC this GPU's traffic to other nodes leaves through (0 when
// absent). Its node has as many NICs as distinct values among its hosts.
constexpr const char* kNicProperty = "aggsim_nic";
// Host property: what the GPUs of this host's node talk over, `nvlink` (the default), `pcie` or
// `xgmi`.
constexpr const char* kIntraLinkProperty = "aggsim_intra_link";
// Host property, `true` when the GPUs of this host's node sit on a switch that reduces (NVSwitch
// with NVLS); absent or `false` otherwise.
constexpr const char* kNvswitchProperty = "aggsim_nvswitch";
// Host property: how this GPU reaches its NIC, in NCCL's path names: pix | pxb (PCIe switches, the
// default), pxn (through another GPU of the node), phb | sys (through the CPU). NCCL uses LL128
// between nodes only up to pxb (pxn on Hopper).
constexpr const char* kGpuNicPathProperty = "aggsim_gpu_nic_path";
// Host property: the GPU's generation (kGpuNames), whose constants NCCL's model follows.
constexpr const char* kGpuProperty = "aggsim_gpu";
// Host property naming the NVLink domain of this host's node: nodes that share one names a domain
// of several nodes whose GPUs all sit on one switch fabric (NVL72). Absent: the node is its own.
constexpr const char* kNvlinkDomainProperty = "aggsim_nvlink_domain";
// Host property: the share of its NVLink port's rate this GPU's NVLink links were built with (the
// `nvlink_efficiency` key; absent: 1). NCCL's model recovers the port's rate from it.
constexpr const char* kNvlinkEfficiencyProperty = "aggsim_nvlink_efficiency";
// Property of the platform's root zone: the fabric between nodes, infiniband | roce | ethernet.
constexpr const char* kFabricProperty = "aggsim_fabric";

struct HostFacts {
  std::string node;  // kNodeProperty; empty: the host is a node of its own
  int nic = 0;
  IntraLink intra_link = IntraLink::nvlink;
  bool nvswitch = false;
  GpuNicPath gpu_nic_path = GpuNicPath::pxb;
  std::optional<GpuGeneration> gpu;
  std::string nvlink_domain;  // empty: the node's own
  double nvlink_efficiency = 1;
};

// Why `value` is not a valid value of the aggsim host property `id` ("" when it is, or when `id` is
// no property of ours): the one check of the values, used by the XML check (which knows the line)
// and by host_facts.
std::string host_property_error(const std::string& id, const std::string& value);

// Sets the fact the aggsim host property `id` carries from `value` (one host_property_error
// accepts); ids of no fact are ignored. The one place a property's text becomes a fact: built hosts'
// facts and what an XML platform declares are both read through it.
void read_host_property(HostFacts& facts, const std::string& id, const std::string& value);

// The host's facts, parsed from its properties on first use and kept with the host. Throws
// InputError naming the host and the property on a value host_property_error refuses.
const HostFacts& host_facts(const sg4::Host* host);

// Whether two hosts' GPUs reach each other over NVLink without a NIC: the same node, or nodes of one
// NVLink domain.
bool same_nvlink_reach(const sg4::Host* a, const sg4::Host* b);

}  // namespace aggsim
