#include "sim/platform/platform.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <boost/property_tree/ptree.hpp>
#include <boost/property_tree/xml_parser.hpp>
#include <cctype>
#include <map>
#include <xbt/config.hpp>

#include "sim/core/error.hpp"
#include "sim/core/input_file.hpp"
#include "sim/core/strings.hpp"
#include "sim/platform/platform_overrides.hpp"
#include "sim/platform/topology.hpp"
#include "sim/platform/xml_check.hpp"

namespace aggsim {

const char* fabric_name(Fabric fabric) {
  switch (fabric) {
    case Fabric::infiniband:
      return "infiniband";
    case Fabric::roce:
      return "roce";
    case Fabric::ethernet:
      return "ethernet";
  }
  return "?";
}

namespace {
constexpr Fabric kFabrics[] = {Fabric::infiniband, Fabric::roce, Fabric::ethernet};
}  // namespace

std::vector<std::string> fabric_names() {
  std::vector<std::string> names;
  for (Fabric f : kFabrics) names.push_back(fabric_name(f));
  return names;
}

Fabric parse_fabric(const std::string& name) {
  for (Fabric f : kFabrics)
    if (name == fabric_name(f)) return f;
  throw std::invalid_argument(
      fmt::format("unknown fabric '{}' ({})", name, fmt::join(fabric_names(), " | ")));
}

Fabric xml_fabric(const std::string& file) {
  const std::vector<XmlElement> elements = scan_xml_elements(read_input_file(file, "platform"));
  int root = -1;  // the platform's root zone: its first zone or cluster
  for (std::size_t i = 0; i < elements.size(); ++i)
    if (elements[i].depth == 1 && (elements[i].name == "zone" || elements[i].name == "cluster")) {
      root = static_cast<int>(i);
      break;
    }
  for (const XmlElement& e : elements) {
    if (e.name != "prop" || e.parent != root || root < 0 || e.attribute("id") != kFabricProperty) continue;
    try {
      return parse_fabric(e.attribute("value"));
    } catch (const std::invalid_argument& error) {
      throw InputError(fmt::format("{}:{}: {}: {}", file, e.line, kFabricProperty, error.what()));
    }
  }
  return Fabric::infiniband;
}

bool xml_sets_property(const std::string& file, const std::string& id, const std::string& value) {
  const std::vector<XmlElement> elements = scan_xml_elements(read_input_file(file, "platform"));
  return std::any_of(elements.begin(), elements.end(), [&](const XmlElement& e) {
    return e.name == "prop" && e.attribute("id") == id && e.attribute("value") == value;
  });
}

bool ns3_network_model() {
  return simgrid::config::get_value<std::string>("network/model") == "ns-3";
}

void build_platform(const PlatformSpec& spec, sg4::Engine& engine) {
  const bool ns3 = ns3_network_model();
  if (!spec.file.empty()) {
    check_platform_xml(spec.file, ns3);
    try {
      engine.load_platform(spec.file);
    } catch (const std::exception& e) {
      throw InputError(explain_simgrid_error(spec.file, e.what()));
    }
    engine.get_netzone_root()->set_property(kFabricProperty, fabric_name(spec.fabric));
    return;
  }
  const TopologyInfo* info = spec.generator;
  if (!info) throw std::logic_error("platform '" + spec.topology + "' was not resolved by the loader");
  if (ns3 && !info->build_ns3)
    throw InputError(
        fmt::format("platform: topology {} cannot run under ns-3 (SimGrid 3.32 gives ns-3 only one-link "
                    "routes; the {} zone computes its routes itself); use topology cluster",
                    spec.topology, spec.topology));
  try {
    const ResolvedOverrides overrides = resolve_overrides(node_shape(spec.params), spec.overrides);
    (ns3 ? info->build_ns3 : info->build)(spec.params, overrides);
  } catch (const std::invalid_argument& e) {
    throw InputError(fmt::format("platform: {}", e.what()));
  }
  engine.get_netzone_root()->set_property(kFabricProperty, fabric_name(spec.fabric));
  // SimGrid fires this only after parsing XML; listeners need it for built platforms too (the
  // ns-3 binding computes its IP routes there: without it no packet leaves a host).
  sg4::Engine::on_platform_created();
}

std::vector<sg4::Host*> hosts_in_natural_order(const sg4::Engine& engine) {
  auto hosts = engine.get_all_hosts();
  std::sort(hosts.begin(), hosts.end(), [](const sg4::Host* x, const sg4::Host* y) {
    return natural_less(x->get_name(), y->get_name());
  });
  return hosts;
}

namespace {

// Whether SimGrid can send from `a` to `b`: Floyd and Dijkstra zones throw on a missing route, Full
// zones return an empty one, on which the network model later aborts the process.
bool has_route(const sg4::Host* a, const sg4::Host* b) {
  if (a == b) return true;
  std::vector<sg4::Link*> links;
  double latency = 0;
  try {
    a->route_to(b, links, &latency);
  } catch (const std::exception&) {
    return false;
  }
  return !links.empty() || latency > 0;
}

}  // namespace

void check_rank_routes(const std::vector<sg4::Host*>& rank_hosts, const std::string& platform_file) {
  // Floyd zones compute their routes when sealed; run() would seal too, but only later.
  sg4::Engine::get_instance()->seal_platform();
  const std::size_t p = rank_hosts.size();
  auto check = [&](std::size_t i, std::size_t j) {
    if (has_route(rank_hosts[i], rank_hosts[j])) return;
    throw InputError(
        fmt::format("{}: ranks {} and {} run on hosts '{}' and '{}', and the platform has no route from "
                    "'{}' to '{}'; add a <route> (or a zone routing that finds one) or use fewer ranks",
                    platform_file, i, j, rank_hosts[i]->get_name(), rank_hosts[j]->get_name(),
                    rank_hosts[i]->get_name(), rank_hosts[j]->get_name()));
  };
  if (p <= kAllPairsRouteCheck) {
    for (std::size_t i = 0; i < p; ++i)
      for (std::size_t j = 0; j < p; ++j) check(i, j);
    return;
  }
  for (std::size_t i = 1; i < p; ++i) {
    check(0, i);
    check(i, 0);
    check(i, (i + 1) % p);
    check((i + 1) % p, i);
  }
}

RankLayout layout_of(const std::vector<sg4::Host*>& rank_hosts) {
  RankLayout layout;
  std::map<std::string, int> node_ids;
  for (const auto* host : rank_hosts) {
    const char* node = host->get_property(kNodeProperty);
    const std::string key = node ? std::string("node:") + node : "host:" + host->get_name();
    auto it = node_ids.emplace(key, static_cast<int>(node_ids.size())).first;
    layout.node_of_rank.push_back(it->second);
  }
  return layout;
}

}  // namespace aggsim
