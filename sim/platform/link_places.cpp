#include "sim/platform/link_places.hpp"

#include <fmt/format.h>

#include <regex>

#include "sim/platform/endpoints.hpp"
#include "sim/platform/shape_math.hpp"
#include "sim/platform/topology.hpp"

namespace aggsim {

namespace {

// Tiers, from the hosts outwards.
constexpr const char* kIntraNode = "intra_node";  // a GPU's link inside its node
constexpr const char* kNic = "nic";               // a node's NIC, shared by its GPUs
constexpr const char* kEdge = "edge";             // an endpoint's link into the fabric
constexpr const char* kAggregation = "aggregation";
constexpr const char* kCore = "core";

// One direction of a split-duplex link carries traffic from the first of its two ends (UP: the
// lower end, as every generator and SimGrid's zones route upwards on UP) to the second.
LinkPlace directed(const std::string& lower, const std::string& upper, const std::string& direction,
                   const std::string& tier) {
  if (direction == "DOWN") return {upper, lower, tier};
  return {lower, upper, tier};
}

// The node leaf `id` of a SimGrid cluster zone: an endpoint (host, or a multi-GPU node's NIC
// router) or an idle spare router.
std::string leaf_name(const NodeShape& shape, const std::string& topology, std::int64_t id) {
  if (id >= shape.nodes) return fmt::format("{}-spare-{}", topology, id);
  return shape.has_nic ? fmt::format("node-{}-nic", id) : endpoint_host_name(shape, id, 0);
}

void generated_places(const PlatformSpec& spec, const std::vector<std::string>& names,
                      std::map<std::string, LinkPlace>& out) {
  const NodeShape& shape = spec.shape;
  const std::string& topology = spec.topology;
  const std::string the_switch = "cluster-switch";
  static const std::regex gpu_link(R"((node-\d+-gpu-\d+)_link(?:_(UP|DOWN))?)");
  static const std::regex host_link(R"((host-\d+)_link(?:_(UP|DOWN))?)");
  static const std::regex node_link(R"(node-(\d+)_link(?:_(UP|DOWN))?)");
  static const std::regex nic(R"(node-(\d+)_nic(?:-\d+)?_(UP|DOWN))");
  static const std::regex tree_link(R"(link_from_(\d+)_(\d+)_(\d+)(?:_(UP|DOWN))?)");
  static const std::regex torus_link(R"(torus_link_from_(\d+)_to_(\d+)(?:_(UP|DOWN))?)");
  static const std::regex local_link(R"(local_link_from_router_(\d+)_to_node_(\d+)_\d+(?:_(UP|DOWN))?)");

  // Fat trees: SimGrid numbers leaves and switches separately (a leaf and a switch may share a
  // number), so leaf links are told by their link number; a switch is one level above the
  // highest switch linked below it.
  const std::int64_t leaf_links = topology == "fat_tree" ? fat_tree_leaf_links(spec.fabric_shape.fat_tree) : 0;
  auto is_leaf_link = [&](const std::smatch& match) { return std::stoll(match[3]) < leaf_links; };
  std::map<std::int64_t, int> level;  // switch number -> level (1: above the leaves)
  std::vector<std::pair<std::int64_t, std::int64_t>> switch_links;
  std::smatch m;
  for (const auto& name : names) {
    if (topology != "fat_tree" || !std::regex_match(name, m, tree_link)) continue;
    if (is_leaf_link(m))
      level[std::stoll(m[2])] = 1;
    else
      switch_links.emplace_back(std::stoll(m[1]), std::stoll(m[2]));
  }
  for (int pass = 0; pass < 9; ++pass)  // longest paths; a fat tree has at most 8 levels
    for (const auto& [lower, upper] : switch_links) level[upper] = std::max(level[upper], level[lower] + 1);
  int top = 0;
  for (const auto& [id, l] : level) top = std::max(top, l);
  auto tree_switch = [](std::int64_t id) { return fmt::format("fat_tree-switch-{}", id); };

  for (const auto& name : names) {
    LinkPlace place;
    if (name == "__loopback__") {
      place.tier = "loopback";
    } else if (std::regex_match(name, m, gpu_link)) {
      const std::string host = m[1];
      place = directed(host, host.substr(0, host.find("-gpu-")) + "-switch", m[2], kIntraNode);
    } else if (std::regex_match(name, m, host_link)) {
      // A single-GPU node with a NIC of its own: the host's link is inside the node.
      place = shape.has_nic ? directed(m[1], "node-" + m[1].str().substr(5) + "-switch", m[2], kIntraNode)
                            : directed(m[1], the_switch, m[2], kEdge);
    } else if (std::regex_match(name, m, node_link)) {
      place = directed(fmt::format("node-{}-nic", m[1].str()), the_switch, m[2], kEdge);
    } else if (std::regex_match(name, m, nic)) {
      place = directed(fmt::format("node-{}-switch", m[1].str()), fmt::format("node-{}-nic", m[1].str()),
                       m[2], kNic);
    } else if (name == "backbone") {
      place = {the_switch, the_switch, kCore};
    } else if (topology == "fat_tree" && std::regex_match(name, m, tree_link)) {
      const std::int64_t lower = std::stoll(m[1]), upper = std::stoll(m[2]);
      if (is_leaf_link(m))
        place = directed(leaf_name(shape, topology, lower), tree_switch(upper), m[4], kEdge);
      else
        place = directed(tree_switch(lower), tree_switch(upper), m[4],
                         level[upper] == top ? kCore : kAggregation);
    } else if (std::regex_match(name, m, torus_link)) {
      place = directed(leaf_name(shape, topology, std::stoll(m[1])),
                       leaf_name(shape, topology, std::stoll(m[2])), m[3], "torus");
    } else if (std::regex_match(name, m, local_link)) {
      // Router r serves nodes r * nodes_per_router + j.
      const std::int64_t router = std::stoll(m[1]);
      const std::int64_t per_router = spec.fabric_shape.dragonfly.nodes_per_router;
      place = directed(leaf_name(shape, topology, router * per_router + std::stoll(m[2])),
                       fmt::format("dragonfly-router-{}", router), m[3], kEdge);
    } else if (name.rfind("green_link", 0) == 0) {
      place.tier = "chassis";  // SimGrid's name does not say which group: ends left empty
    } else if (name.rfind("black_link", 0) == 0) {
      place.tier = "group";
    } else if (name.rfind("blue_link", 0) == 0) {
      place.tier = "global";
    }
    out[name] = place;
  }
}

void routed_places(const std::vector<sg4::Host*>& rank_hosts, std::map<std::string, LinkPlace>& out) {
  if (rank_hosts.size() < 2) return;
  for (std::size_t r = 0; r < rank_hosts.size(); ++r) {
    std::vector<sg4::Link*> route;
    rank_hosts[r]->route_to(rank_hosts[(r + 1) % rank_hosts.size()], route, nullptr);
    if (route.empty()) continue;
    out[route.front()->get_name()].end_a = rank_hosts[r]->get_name();
    out[route.back()->get_name()].end_b = rank_hosts[(r + 1) % rank_hosts.size()]->get_name();
  }
}

}  // namespace

std::map<std::string, LinkPlace> link_places(const PlatformSpec& spec, const sg4::Engine& engine,
                                             const std::vector<sg4::Host*>& rank_hosts) {
  std::map<std::string, LinkPlace> out;
  if (spec.file.empty()) {
    std::vector<std::string> names;
    for (const auto* link : engine.get_all_links()) names.push_back(link->get_name());
    generated_places(spec, names, out);
  } else {
    routed_places(rank_hosts, out);
    out["__loopback__"].tier = "loopback";
  }
  return out;
}

}  // namespace aggsim
