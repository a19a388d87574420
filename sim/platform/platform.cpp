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
#include "sim/platform/endpoints.hpp"
#include "sim/platform/host_facts.hpp"
#include "sim/platform/platform_overrides.hpp"
#include "sim/platform/topology.hpp"
#include "sim/platform/xml_check.hpp"

namespace aggsim {

const char* fabric_name(Fabric fabric) { return kFabricNames.name(fabric); }

std::vector<std::string> fabric_names() { return kFabricNames.list(); }

Fabric parse_fabric(const std::string& name) { return kFabricNames.parse(name, "fabric"); }

XmlDeclared xml_declared(const std::string& file) {
  const std::vector<XmlElement> elements = scan_xml_elements(read_input_file(file, "platform"));
  int root = -1;  // the platform's root zone: its first zone or cluster
  for (std::size_t i = 0; i < elements.size(); ++i)
    if (elements[i].depth == 1 && (elements[i].name == "zone" || elements[i].name == "cluster")) {
      root = static_cast<int>(i);
      break;
    }
  XmlDeclared declared;
  bool fabric_seen = false;
  for (const XmlElement& e : elements) {
    if (e.name != "prop") continue;
    const std::string id = e.attribute("id"), value = e.attribute("value");
    if (id == kFabricProperty && e.parent == root && root >= 0 && !fabric_seen) {
      fabric_seen = true;
      try {
        declared.fabric = parse_fabric(value);
      } catch (const std::invalid_argument& error) {
        throw InputError(fmt::format("{}:{}: {}: {}", file, e.line, kFabricProperty, error.what()));
      }
    }
    if (!host_property_error(id, value).empty()) continue;  // the XML check reports it with its line
    HostFacts facts;
    read_host_property(facts, id, value);
    if (facts.nvswitch) declared.some_nvswitch = true;
    if (facts.gpu && !declared.gpu) declared.gpu = facts.gpu;
  }
  return declared;
}

bool ns3_network_model() {
  return simgrid::config::get_value<std::string>("network/model") == "ns-3";
}

void decode_generated_platform(PlatformSpec& spec) {
  spec.shape = node_shape(spec.params);
  spec.fabric_shape = spec.generator->decode(spec.shape, spec.params);
  spec.resolved_overrides = std::make_shared<const ResolvedOverrides>(resolve_overrides(spec.shape, spec.overrides));
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
  if (!info || spec.shape.nodes == 0)
    throw std::logic_error("platform '" + spec.topology + "' was not decoded by the loader");
  if (ns3 && !info->build_ns3)
    throw InputError(
        fmt::format("platform: topology {} cannot run under ns-3 (SimGrid 3.32 gives ns-3 only one-link "
                    "routes; the {} zone computes its routes itself); use topology cluster",
                    spec.topology, spec.topology));
  try {
    static const ResolvedOverrides none;
    const ResolvedOverrides& overrides = spec.resolved_overrides ? *spec.resolved_overrides : none;
    (ns3 ? info->build_ns3 : info->build)(spec.shape, spec.fabric_shape, overrides);
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
    const std::string& node = host_facts(host).node;
    const std::string key = !node.empty() ? "node:" + node : "host:" + host->get_name();
    auto it = node_ids.emplace(key, static_cast<int>(node_ids.size())).first;
    layout.node_of_rank.push_back(it->second);
  }
  return layout;
}

}  // namespace aggsim
