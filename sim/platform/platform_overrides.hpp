#pragma once
// Per-host and per-node values on a generated platform (`platform.overrides`): a slow NIC, an older
// node, a straggling GPU. Each entry selects hosts (by name, with [a-b,c] ranges) or nodes (by
// index) and gives some of the generator's own per-link and per-host keys:
//   speed                            the selected hosts' compute speed (a node: all its GPUs)
//   bandwidth, latency               the node's own link(s) into the fabric (see each generator)
//   nic_bandwidth                    each NIC of the node (nodes with a NIC: gpus_per_node > 1,
//                                    nic_bandwidth or nics_per_node given)
//   intra_bandwidth, intra_latency   each selected GPU's link inside its node (gpus_per_node > 1)
// Later entries win over earlier ones, per host (or node) and key; on a link joining two selected
// nodes (a torus link), the later entry wins.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "sim/platform/endpoints.hpp"
#include "sim/platform/platform_spec.hpp"

namespace aggsim {

// The value keys an entry may give, with their units.
const std::vector<ParamSpec>& override_param_specs();

// An entry that cannot apply: `entry` is its index in the list, `key` the offending key ("hosts",
// "nodes", "bandwidth", ...), so the loader can point at it in the file.
class OverrideError : public std::invalid_argument {
 public:
  OverrideError(std::size_t entry_, std::string key_, const std::string& message)
      : std::invalid_argument(message), entry(entry_), key(std::move(key_)) {}
  std::size_t entry;
  std::string key;
};

// The entries resolved to hosts and nodes, later entries applied over earlier ones.
struct ResolvedOverrides {
  struct Value {
    double value = 0;
    std::size_t entry = 0;  // which entry gave it (later wins where two nodes share a link)
  };
  struct NodeLinks {
    std::optional<Value> bandwidth, latency, nic_bandwidth;
  };
  struct HostValues {
    std::optional<double> speed, intra_bandwidth, intra_latency;
  };
  std::unordered_map<std::int64_t, NodeLinks> nodes;   // by node index
  std::unordered_map<std::int64_t, HostValues> hosts;  // by node * gpus_per_node + gpu
  std::int64_t gpus_per_node = 1;
  // A node's fabric link carries one plane per NIC (nics_per_node): a `bandwidth` override is per
  // plane, like the key it overrides.
  double fabric_planes = 1;

  bool empty() const { return nodes.empty() && hosts.empty(); }
  const NodeLinks* node(std::int64_t node) const;
  const HostValues* host(std::int64_t node, std::int64_t gpu) const;
  // The node's fabric bandwidth / latency, `fallback` when not overridden.
  double bandwidth(std::int64_t node, double fallback) const;
  double latency(std::int64_t node, double fallback) const;
};

// Checks every entry against the platform's shape and resolves it. Throws OverrideError for a
// selector naming a host or node the platform does not have, a key that does not apply to this
// platform or selector, or a value that is not positive.
ResolvedOverrides resolve_overrides(const NodeShape& shape, const std::vector<PlatformOverride>& entries);

// "node-[0-1]-gpu-[0,3]" -> node-0-gpu-0, node-0-gpu-3, node-1-gpu-0, node-1-gpu-3. Throws
// std::invalid_argument on a malformed range or more than `limit` names.
std::vector<std::string> expand_host_pattern(const std::string& pattern, std::int64_t limit);

// Sets the overridden bandwidth / latency on the fabric links of a built platform: `owners(name,
// nodes)` appends the nodes whose own link the link `name` is (none for switch-to-switch links).
// One pass over the platform's links, only when some node has a fabric override.
using LinkOwners = std::function<void(const std::string& link, std::vector<std::int64_t>& nodes)>;
void override_fabric_links(const ResolvedOverrides& overrides, const LinkOwners& owners);

// The numbers in `name` after `prefix` ("link_from_3_17_2_UP" after "link_from_" -> 3, 17, 2); false
// when `name` does not start with `prefix`.
bool numbers_after(const std::string& name, const std::string& prefix, std::vector<std::int64_t>& numbers);

}  // namespace aggsim
