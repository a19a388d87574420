#pragma once
// Builds the simulated platform (from XML or a generator) and maps ranks to hosts.
#include <optional>
#include <simgrid/s4u.hpp>
#include <string>
#include <vector>

#include "sim/api/rank_layout.hpp"
#include "sim/platform/host_facts.hpp"
#include "sim/platform/platform_spec.hpp"

namespace aggsim {

namespace sg4 = simgrid::s4u;

// What an XML platform's properties declare, read before it is built (which hosts the ranks land
// on is known only then).
struct XmlDeclared {
  // The aggsim_fabric property of its root zone (or cluster), infiniband when it declares none.
  Fabric fabric = Fabric::infiniband;
  bool some_nvswitch = false;         // some host's GPUs sit on a switch that reduces
  std::optional<GpuGeneration> gpu;   // the first GPU generation some host declares
};
// Throws InputError("file:line: ...") on a fabric that is not one of kFabricNames (host properties
// are checked, with their lines, by check_platform_xml).
XmlDeclared xml_declared(const std::string& file);

// Decodes a generated platform's keys (spec.params) once: its node shape, the generator's check of
// its own keys, and the overrides resolved against the shape. Throws OverrideError for an override
// entry, std::invalid_argument naming the key otherwise.
void decode_generated_platform(PlatformSpec& spec);

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

// Node of each rank from the hosts' node property; nodes are numbered in order of first rank.
RankLayout layout_of(const std::vector<sg4::Host*>& rank_hosts);

}  // namespace aggsim
