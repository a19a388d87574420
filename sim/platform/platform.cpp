#include "sim/platform/platform.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <boost/property_tree/ptree.hpp>
#include <boost/property_tree/xml_parser.hpp>
#include <cctype>
#include <map>
#include <xbt/config.hpp>

#include "sim/core/error.hpp"
#include "sim/core/strings.hpp"
#include "sim/platform/topology.hpp"
#include "sim/platform/xml_check.hpp"

namespace aggsim {

namespace {

// Catch malformed XML with a precise line before SimGrid's parser sees it.
void check_well_formed(const std::string& file) {
  boost::property_tree::ptree tree;
  try {
    boost::property_tree::read_xml(file, tree);
  } catch (const boost::property_tree::xml_parser_error& e) {
    throw InputError(fmt::format("{}:{}: malformed platform XML: {}", file, e.line(), e.message()));
  }
  if (tree.find("platform") == tree.not_found())
    throw InputError(fmt::format("{}: not a SimGrid platform (no <platform> root element)", file));
}

}  // namespace

bool ns3_network_model() {
  return simgrid::config::get_value<std::string>("network/model") == "ns-3";
}

void build_platform(const PlatformSpec& spec, sg4::Engine& engine) {
  const bool ns3 = ns3_network_model();
  if (!spec.file.empty()) {
    check_well_formed(spec.file);
    check_platform_xml(spec.file, ns3);
    try {
      engine.load_platform(spec.file);
    } catch (const std::exception& e) {
      throw InputError(explain_simgrid_error(spec.file, e.what()));
    }
    return;
  }
  const TopologyInfo* info = find_topology(spec.topology);
  if (!info) throw InputError("unknown topology '" + spec.topology + "'");
  if (ns3 && !info->build_ns3)
    throw InputError(
        fmt::format("platform: topology {} cannot run under ns-3 (SimGrid 3.32 gives ns-3 only one-link "
                    "routes; the {} zone computes its routes itself); use topology cluster",
                    spec.topology, spec.topology));
  try {
    (ns3 ? info->build_ns3 : info->build)(spec.params);
  } catch (const std::invalid_argument& e) {
    throw InputError(fmt::format("platform: {}", e.what()));
  }
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
