#include "sim/platform/platform_overrides.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <simgrid/s4u.hpp>

#include "sim/core/strings.hpp"

namespace aggsim {

namespace sg4 = simgrid::s4u;

const std::vector<ParamSpec>& override_param_specs() {
  static const std::vector<ParamSpec> specs = {
      ParamSpec("speed", ParamKind::speed, "",
                "compute speed of the selected hosts (of a node: all its GPUs)"),
      ParamSpec("bandwidth", ParamKind::bandwidth, "", "the node's own link(s) into the fabric"),
      ParamSpec("latency", ParamKind::duration, "", "the node's own link(s) into the fabric"),
      ParamSpec("nic_bandwidth", ParamKind::bandwidth, "", "each NIC of the node (nodes that have one)"),
      ParamSpec("intra_bandwidth", ParamKind::bandwidth, "",
                "each selected GPU's link inside its node (gpus_per_node > 1)"),
      ParamSpec("intra_latency", ParamKind::duration, "",
                "each selected GPU's link latency (gpus_per_node > 1)"),
  };
  return specs;
}

namespace {

// "0-3, 7" -> {{0, 3}, {7, 7}}: whole numbers (no sign, no leading zero) and ranges a-b.
std::vector<std::pair<std::int64_t, std::int64_t>> ranges_of(const std::string& text,
                                                             const std::string& what) {
  auto number = [](const std::string& t) {
    return !t.empty() && t.size() <= 12 && (t.size() == 1 || t[0] != '0') &&
           std::all_of(t.begin(), t.end(), [](unsigned char c) { return std::isdigit(c); });
  };
  std::vector<std::pair<std::int64_t, std::int64_t>> out;
  for (const auto& piece : split_list(text)) {
    const auto dash = piece.find('-');
    const std::string first = piece.substr(0, dash);
    const std::string last = dash == std::string::npos ? first : piece.substr(dash + 1);
    if (!number(first) || !number(last))
      throw std::invalid_argument(
          fmt::format("'{}' is not a {} or a range of them (e.g. 3, or 0-3)", piece, what));
    const std::int64_t a = std::stoll(first), b = std::stoll(last);
    if (b < a) throw std::invalid_argument(fmt::format("range '{}' ends before it starts", piece));
    out.emplace_back(a, b);
  }
  return out;
}

void expand(const std::string& pattern, std::size_t from, const std::string& prefix,
            std::vector<std::string>& out) {
  const auto open = pattern.find('[', from);
  if (open == std::string::npos) {
    out.push_back(prefix + pattern.substr(from));
    return;
  }
  const auto close = pattern.find(']', open);
  const std::string head = prefix + pattern.substr(from, open - from);
  for (const auto& [a, b] : ranges_of(pattern.substr(open + 1, close - open - 1), "host number"))
    for (std::int64_t i = a; i <= b; ++i) expand(pattern, close + 1, head + std::to_string(i), out);
}

// {node, gpu} of a generated host's name; nullopt when the platform has no such host.
std::optional<std::pair<std::int64_t, std::int64_t>> host_of(const NodeShape& shape,
                                                             const std::string& name) {
  std::vector<std::int64_t> numbers;
  const bool single = shape.gpus_per_node == 1;
  if (!numbers_after(name, single ? "host-" : "node-", numbers) || numbers.size() != (single ? 1u : 2u))
    return std::nullopt;
  const std::int64_t node = numbers[0], gpu = single ? 0 : numbers[1];
  if (node >= shape.nodes || gpu >= shape.gpus_per_node || endpoint_host_name(shape, node, gpu) != name)
    return std::nullopt;
  return std::make_pair(node, gpu);
}

std::string hosts_named(const NodeShape& shape) {
  return fmt::format("{} .. {}", endpoint_host_name(shape, 0, 0),
                     endpoint_host_name(shape, shape.nodes - 1, shape.gpus_per_node - 1));
}

}  // namespace

std::vector<std::string> expand_host_pattern(const std::string& pattern, std::int64_t limit) {
  // Count first: a range such as [0-99999999] must not be expanded before it is refused.
  std::int64_t count = 1;
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == ']') throw std::invalid_argument(fmt::format("'{}': ']' without '['", pattern));
    if (pattern[i] != '[') continue;
    const auto close = pattern.find(']', i);
    if (close == std::string::npos)
      throw std::invalid_argument(fmt::format("'{}': '[' without ']'", pattern));
    const std::string inside = pattern.substr(i + 1, close - i - 1);
    if (inside.find('[') != std::string::npos)
      throw std::invalid_argument(fmt::format("'{}': brackets inside brackets", pattern));
    std::int64_t n = 0;
    for (const auto& [a, b] : ranges_of(inside, "host number"))
      n += std::min<std::int64_t>(b - a + 1, limit + 1);
    count = std::min<std::int64_t>(count * std::min<std::int64_t>(n, limit + 1), limit + 1);
    i = close;
  }
  if (count > limit)
    throw std::invalid_argument(fmt::format("'{}' names more hosts than the platform's {}", pattern, limit));
  std::vector<std::string> out;
  expand(pattern, 0, "", out);
  return out;
}

bool numbers_after(const std::string& name, const std::string& prefix, std::vector<std::int64_t>& numbers) {
  if (name.compare(0, prefix.size(), prefix) != 0) return false;
  numbers.clear();
  for (std::size_t i = prefix.size(); i < name.size();) {
    if (!std::isdigit(static_cast<unsigned char>(name[i]))) {
      ++i;
      continue;
    }
    std::size_t j = i;
    while (j < name.size() && std::isdigit(static_cast<unsigned char>(name[j])) && j - i < 18) ++j;
    numbers.push_back(std::stoll(name.substr(i, j - i)));
    i = j;
  }
  return true;
}

const ResolvedOverrides::NodeLinks* ResolvedOverrides::node(std::int64_t n) const {
  const auto it = nodes.find(n);
  return it == nodes.end() ? nullptr : &it->second;
}

const ResolvedOverrides::HostValues* ResolvedOverrides::host(std::int64_t n, std::int64_t gpu) const {
  const auto it = hosts.find(n * gpus_per_node + gpu);
  return it == hosts.end() ? nullptr : &it->second;
}

double ResolvedOverrides::bandwidth(std::int64_t n, double fallback) const {
  const NodeLinks* links = node(n);
  return links && links->bandwidth ? links->bandwidth->value * fabric_planes : fallback;
}

double ResolvedOverrides::latency(std::int64_t n, double fallback) const {
  const NodeLinks* links = node(n);
  return links && links->latency ? links->latency->value : fallback;
}

ResolvedOverrides resolve_overrides(const NodeShape& shape, const std::vector<PlatformOverride>& entries) {
  ResolvedOverrides out;
  out.gpus_per_node = shape.gpus_per_node;
  out.fabric_planes = static_cast<double>(shape.nics_per_node);
  const bool multi_gpu = shape.gpus_per_node > 1;
  for (std::size_t e = 0; e < entries.size(); ++e) {
    const PlatformOverride& entry = entries[e];
    const bool by_hosts = entry.selector == PlatformOverride::Selector::hosts;
    const std::string selector = by_hosts ? "hosts" : "nodes";
    const Params& v = entry.values;
    auto fail = [&](const std::string& key, const std::string& message) -> void {
      throw OverrideError(e, key, message);
    };
    for (const auto& [key, value] : v.all()) {
      const bool node_link = key == "bandwidth" || key == "latency" || key == "nic_bandwidth";
      const bool inside_node = key.rfind("intra_", 0) == 0;
      if (!multi_gpu && inside_node)
        fail(key, fmt::format("only with gpus_per_node > 1 (a single-GPU node's link to the fabric is "
                              "bandwidth / latency)"));
      if (key == "nic_bandwidth" && !shape.has_nic)
        fail(key,
             "this node has no NIC link of its own (give gpus_per_node > 1, nic_bandwidth or "
             "nics_per_node in the platform; a single-GPU node's link to the fabric is bandwidth)");
      if (multi_gpu && by_hosts && node_link)
        fail(key, fmt::format("a node's fabric link and NIC are shared by its GPUs: select the node with "
                              "'nodes: N' (a GPU's own link is intra_bandwidth / intra_latency)"));
      if (shape.nvlink_domain > 1 && (key == "bandwidth" || key == "latency"))
        fail(key, "with nvlink_domain > 1 the fabric link belongs to the whole NVLink domain, not to one "
                  "node: give the platform's bandwidth / latency (a node's NICs: nic_bandwidth)");
      if (key != "latency" && key != "intra_latency" && v.real(key) <= 0) fail(key, "must be positive");
    }
    if (v.all().empty())
      fail(selector,
           "gives no value: add speed, bandwidth, latency, nic_bandwidth, "
           "intra_bandwidth or intra_latency");

    auto set_node = [&](std::int64_t node) {
      ResolvedOverrides::NodeLinks* links = nullptr;
      auto get = [&]() -> ResolvedOverrides::NodeLinks& {
        if (!links) links = &out.nodes[node];
        return *links;
      };
      if (v.has("bandwidth")) get().bandwidth = ResolvedOverrides::Value{v.real("bandwidth"), e};
      if (v.has("latency")) get().latency = ResolvedOverrides::Value{v.real("latency"), e};
      if (v.has("nic_bandwidth")) get().nic_bandwidth = ResolvedOverrides::Value{v.real("nic_bandwidth"), e};
    };
    auto set_host = [&](std::int64_t node, std::int64_t gpu) {
      if (!v.has("speed") && !v.has("intra_bandwidth") && !v.has("intra_latency")) return;
      auto& host = out.hosts[node * shape.gpus_per_node + gpu];
      if (v.has("speed")) host.speed = v.real("speed");
      if (v.has("intra_bandwidth")) host.intra_bandwidth = v.real("intra_bandwidth");
      if (v.has("intra_latency")) host.intra_latency = v.real("intra_latency");
    };

    if (entry.items.empty()) fail(selector, "selects nothing (an empty list)");
    for (const auto& item : entry.items) {
      if (by_hosts) {
        std::vector<std::string> names;
        try {
          names = expand_host_pattern(item, shape.hosts());
        } catch (const std::invalid_argument& ex) {
          fail(selector, ex.what());
        }
        for (const auto& name : names) {
          const auto host = host_of(shape, name);
          if (!host)
            fail(selector,
                 fmt::format("the platform has no host '{}' (its hosts are {})", name, hosts_named(shape)));
          set_host(host->first, host->second);
          if (!multi_gpu) set_node(host->first);
        }
        continue;
      }
      std::vector<std::pair<std::int64_t, std::int64_t>> ranges;
      try {
        ranges = ranges_of(item, "node index");
      } catch (const std::invalid_argument& ex) {
        fail(selector, ex.what());
      }
      for (const auto& [a, b] : ranges) {
        if (b >= shape.nodes)
          fail(selector,
               fmt::format("node {} is out of range: the platform has nodes 0 .. {}", b, shape.nodes - 1));
        for (std::int64_t node = a; node <= b; ++node) {
          set_node(node);
          for (std::int64_t g = 0; g < shape.gpus_per_node; ++g) set_host(node, g);
        }
      }
    }
  }
  return out;
}

void override_fabric_links(const ResolvedOverrides& overrides, const LinkOwners& owners) {
  bool any = false;
  for (const auto& [node, links] : overrides.nodes) any = any || links.bandwidth || links.latency;
  if (!any) return;
  std::vector<std::int64_t> nodes;
  for (auto* link : sg4::Engine::get_instance()->get_all_links()) {
    nodes.clear();
    owners(link->get_name(), nodes);
    std::optional<ResolvedOverrides::Value> bandwidth, latency;
    for (const std::int64_t node : nodes) {
      const auto* links = overrides.node(node);
      if (!links) continue;
      if (links->bandwidth && (!bandwidth || links->bandwidth->entry >= bandwidth->entry))
        bandwidth = links->bandwidth;
      if (links->latency && (!latency || links->latency->entry >= latency->entry)) latency = links->latency;
    }
    if (bandwidth) link->set_bandwidth(bandwidth->value * overrides.fabric_planes);
    if (latency) link->set_latency(latency->value);
  }
}

}  // namespace aggsim
