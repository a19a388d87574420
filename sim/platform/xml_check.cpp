#include "sim/platform/xml_check.hpp"

#include <fmt/format.h>
#include <strings.h>

#include <algorithm>
#include <boost/property_tree/ptree.hpp>
#include <boost/property_tree/xml_parser.hpp>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <tuple>

#include "sim/core/error.hpp"
#include "sim/core/input_file.hpp"
#include "sim/core/strings.hpp"

namespace aggsim {

std::vector<XmlElement> scan_xml_elements(const std::string& text) {
  std::vector<XmlElement> out;
  std::vector<int> open;  // indices of the elements not closed yet
  int line = 1;
  std::size_t i = 0;
  // Moves to `end` (exclusive of what follows), counting lines on the way.
  auto advance_to = [&](std::size_t end) {
    for (; i < end && i < text.size(); ++i)
      if (text[i] == '\n') ++line;
  };
  auto skip_past = [&](const char* marker) {
    const auto end = text.find(marker, i);
    advance_to(end == std::string::npos ? text.size() : end + std::char_traits<char>::length(marker));
  };
  auto is_space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  while (i < text.size()) {
    if (text[i] != '<') {
      const auto next = text.find('<', i);
      advance_to(next == std::string::npos ? text.size() : next);
      continue;
    }
    if (text.compare(i, 4, "<!--") == 0) {
      skip_past("-->");
      continue;
    }
    if (text.compare(i, 9, "<![CDATA[") == 0) {
      skip_past("]]>");
      continue;
    }
    if (text.compare(i, 2, "<?") == 0) {
      skip_past("?>");
      continue;
    }
    if (text.compare(i, 2, "<!") == 0) {
      const auto close = text.find('>', i), bracket = text.find('[', i);
      skip_past(bracket != std::string::npos && bracket < close ? "]>" : ">");
      continue;
    }
    if (text.compare(i, 2, "</") == 0) {
      if (!open.empty()) open.pop_back();
      skip_past(">");
      continue;
    }
    XmlElement e;
    e.line = line;
    e.depth = static_cast<int>(open.size());
    e.parent = open.empty() ? -1 : open.back();
    ++i;
    while (i < text.size() && !is_space(text[i]) && text[i] != '>' && text[i] != '/') e.name += text[i++];
    bool self_closing = false;
    while (i < text.size() && text[i] != '>') {
      if (is_space(text[i]) || text[i] == '/') {
        self_closing = text[i] == '/';
        advance_to(i + 1);
        continue;
      }
      self_closing = false;
      std::string key;
      while (i < text.size() && text[i] != '=' && text[i] != '>' && !is_space(text[i])) key += text[i++];
      while (i < text.size() && text[i] != '"' && text[i] != '\'' && text[i] != '>') advance_to(i + 1);
      if (i >= text.size() || text[i] == '>') break;  // an attribute without a value (malformed)
      const char quote = text[i];
      auto end = text.find(quote, i + 1);
      if (end == std::string::npos) end = text.size();
      e.attributes[key] = text.substr(i + 1, end - i - 1);
      advance_to(end + 1);
    }
    ++i;
    out.push_back(std::move(e));
    if (!self_closing) open.push_back(static_cast<int>(out.size()) - 1);
  }
  return out;
}

namespace {

// Hosts one <cluster> may name: 256 Ki, 16 times the largest platform the benchmarks run. Checking
// names host by host stays within seconds (under ASan too) up to here, and SimGrid would take
// minutes and gigabytes to build a larger cluster.
constexpr long kMaxClusterHosts = 1L << 18;

// "0-15,20" -> its numbers; empty when it does not parse (SimGrid reports that one with its line).
// Throws std::invalid_argument when it names more hosts than a platform can hold.
std::vector<long> expand_radical(const std::string& radical) {
  std::vector<long> out;
  for (const std::string& part : split_list(radical)) {
    // Short parts only: std::regex recurses once per character.
    if (part.size() > 64) return {};
    const std::regex range(R"(\s*(\d{1,9})\s*(?:-\s*(\d{1,9})\s*)?)");
    std::smatch m;
    if (!std::regex_match(part, m, range)) return {};
    const long lo = std::stol(m[1]), hi = m[2].matched ? std::stol(m[2]) : lo;
    if (hi < lo) return {};
    if (static_cast<std::size_t>(hi - lo) + out.size() >= kMaxClusterHosts)
      throw std::invalid_argument(
          fmt::format("radical '{}' names more than {} hosts, more than SimGrid builds in reasonable time "
                      "and memory; split the cluster or use a generated platform",
                      radical.substr(0, 40), kMaxClusterHosts));
    for (long v = lo; v <= hi; ++v) out.push_back(v);
  }
  return out;
}

// "a,b,c" of positive integers; throws std::invalid_argument naming `what`.
std::vector<long> positive_list(const std::string& text, const std::string& what) {
  std::vector<long> out;
  if (text.size() > 4096) throw std::invalid_argument(what + " is too long");
  for (const std::string& item : split_list(text)) {
    if (item.size() > 32 || !std::regex_match(item, std::regex(R"(\s*[1-9]\d{0,8}\s*)")))
      throw std::invalid_argument(
          fmt::format("{} must be positive integers separated by commas (got '{}')", what, text));
    out.push_back(std::stol(item));
  }
  if (out.empty()) throw std::invalid_argument(what + " is empty");
  return out;
}

// Saturates at kMaxClusterHosts: any count beyond it is refused anyway.
long product(const std::vector<long>& v) {
  long p = 1;
  for (long x : v) p = std::min<long>(p * std::min<long>(x, kMaxClusterHosts), kMaxClusterHosts);
  return p;
}

// Number of leaves the cluster topology describes; throws std::invalid_argument on a bad format.
long topology_leaves(const std::string& topology, const std::string& params) {
  if (topology == "TORUS") return product(positive_list(params, "TORUS topo_parameters (the dimensions)"));
  if (topology == "FAT_TREE") {
    const auto parts = split_list(params, ';');
    if (parts.size() != 4)
      throw std::invalid_argument("FAT_TREE topo_parameters must be 'levels;down,..;up,..;link_count,..'");
    const long levels = positive_list(parts[0], "the fat tree's levels").at(0);
    const char* names[] = {"", "down", "up", "link_count"};
    std::vector<long> down;
    for (int k = 1; k <= 3; ++k) {
      const auto list = positive_list(parts[static_cast<std::size_t>(k)],
                                      std::string("the fat tree's ") + names[k] + " list");
      if (static_cast<long>(list.size()) != levels)
        throw std::invalid_argument(fmt::format("the fat tree's {} list has {} entries for {} levels",
                                                names[k], list.size(), levels));
      if (k == 1) down = list;
    }
    return product(down);
  }
  if (topology == "DRAGONFLY") {
    const auto parts = split_list(params, ';');
    const std::string format =
        "DRAGONFLY topo_parameters must be 'groups,links;chassis,links;routers,links;nodes'";
    if (parts.size() != 4) throw std::invalid_argument(format);
    std::vector<long> counts;
    for (std::size_t k = 0; k < 3; ++k) {
      const auto pair = positive_list(parts[k], "each dragonfly level");
      if (pair.size() != 2) throw std::invalid_argument(format);
      counts.push_back(pair[0]);
    }
    const auto nodes = positive_list(parts[3], "the dragonfly's nodes per router");
    if (nodes.size() != 1) throw std::invalid_argument(format);
    if (counts[0] > counts[2])
      throw std::invalid_argument(
          fmt::format("the dragonfly has {} groups but {} routers per chassis; SimGrid 3.32 wires group h to "
                      "router h, so "
                      "groups must not exceed routers",
                      counts[0], counts[2]));
    return product({counts[0], counts[1], counts[2], nodes[0]});
  }
  throw std::invalid_argument(
      fmt::format("unknown cluster topology '{}' (FLAT | TORUS | FAT_TREE | DRAGONFLY)", topology));
}

// Elements of SimGrid 3.32's simgrid.dtd (its parser reports others as a confusing syntax error).
const std::set<std::string> kElements = {
    "platform",    "include",         "trace",   "random",        "trace_connect", "AS",
    "zone",        "storage_type",    "storage", "mount",         "host",          "disk",
    "host_link",   "cluster",         "cabinet", "peer",          "router",        "backbone",
    "link",        "route",           "ASroute", "bypassASroute", "zoneRoute",     "link_ctn",
    "bypassRoute", "bypassZoneRoute", "process", "actor",         "argument",      "config",
    "prop",        "model_prop"};

const std::set<std::string> kRoutings = {"cluster", "dijkstra", "dijkstracache", "floyd",
                                         "full",    "none",     "vivaldi",       "wifi"};

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// A number SimGrid reads from an attribute: its leading value, unit aside ("10Gbps" -> 1e10).
// nullopt when it does not start with a number (SimGrid reports those itself).
std::optional<double> leading_number(const std::string& text) {
  const char* begin = text.c_str();
  while (*begin == ' ' || *begin == '\t') ++begin;
  char* end = nullptr;
  const double v = std::strtod(begin, &end);
  if (end == begin) return std::nullopt;
  return v;
}

struct Checker {
  std::string file;
  bool for_ns3 = false;
  const std::vector<XmlElement>& elements;
  std::map<std::string, int> netpoints, links;  // id -> first line
  // (zone element index, src, dst) -> line of the route that declared it (both directions when symmetrical)
  std::map<std::tuple<int, std::string, std::string, bool>, std::pair<int, bool>> routes;

  [[noreturn]] void fail(const XmlElement& e, const std::string& message) const {
    throw InputError(fmt::format("{}:{}: <{}>: {}", file, e.line, e.name, message));
  }
  void declare(std::map<std::string, int>& names, const std::string& kind, const std::string& id,
               const XmlElement& e) {
    if (id.empty()) return;
    auto [it, inserted] = names.emplace(id, e.line);
    if (!inserted)
      fail(e, fmt::format("duplicate {} id '{}' (already defined at line {})", kind, id, it->second));
  }

  void check_cluster(const XmlElement& e) {
    std::vector<long> radicals;
    try {
      radicals = expand_radical(e.attribute("radical"));
    } catch (const std::invalid_argument& err) {
      fail(e, err.what());
    }
    for (long r : radicals)
      declare(netpoints, "host", e.attribute("prefix") + std::to_string(r) + e.attribute("suffix"), e);
    const std::string topology = e.attribute("topology").empty() ? "FLAT" : e.attribute("topology");
    if (topology != "FLAT") {
      long leaves = 0;
      try {
        leaves = topology_leaves(topology, e.attribute("topo_parameters"));
      } catch (const std::invalid_argument& err) {
        fail(e, err.what());
      }
      if (!radicals.empty() && leaves != static_cast<long>(radicals.size()))
        fail(e,
             fmt::format(
                 "topology {} with topo_parameters '{}' has {} leaves but radical '{}' names {} hosts",
                 topology, e.attribute("topo_parameters"), leaves, e.attribute("radical"), radicals.size()));
    }
    if (!for_ns3) return;
    if (topology != "FLAT")
      fail(e, fmt::format("network ns3: SimGrid 3.32 gives only flat clusters to ns-3 (this one is {}); use "
                          "network lv08 or alpha_beta",
                          topology));
    if (e.attribute("bb_bw").empty())
      fail(e,
           "network ns3: SimGrid 3.32 gives a <cluster> to ns-3 as hosts on a shared CSMA backbone and needs "
           "bb_bw and bb_lat (without them ns-3 divides by zero); add a backbone, or use a generated cluster "
           "(platform: {topology: cluster, ...}), which ns-3 gets as point-to-point links to a switch");
  }

  // Bandwidths, latencies and speeds SimGrid divides by or would run backwards in time with.
  // Wifi links and multi-pstate hosts list several values separated by commas: each is checked.
  void check_positive(const XmlElement& e, const std::string& attribute, bool zero_allowed) {
    const auto it = e.attributes.find(attribute);
    if (it == e.attributes.end()) return;
    for (const std::string& part : split_list(it->second)) {
      const auto v = leading_number(part);
      if (!v) continue;
      if (!std::isfinite(*v) || *v < 0 || (*v == 0 && !zero_allowed))
        fail(e, fmt::format("{}=\"{}\": must be a {} finite number", attribute, it->second,
                            zero_allowed ? "non-negative" : "positive"));
    }
  }

  void check_values(const XmlElement& e) {
    for (const char* bw : {"bandwidth", "bw", "bb_bw", "loopback_bw", "bw_in", "bw_out", "limiter_link"})
      check_positive(e, bw, false);
    for (const char* lat : {"latency", "lat", "bb_lat", "loopback_lat"}) check_positive(e, lat, true);
    if (e.name == "host" || e.name == "cluster" || e.name == "peer" || e.name == "cabinet")
      check_positive(e, "speed", false);
  }

  // SimGrid aborts the whole process on a second route between the same two points of a zone; a
  // symmetrical route (the default) also declares the way back.
  void check_route(const XmlElement& e) {
    const bool zone_route = e.name != "route" && e.name != "bypassRoute";
    const bool bypass = e.name.rfind("bypass", 0) == 0;
    const std::string src = e.attribute("src"), dst = e.attribute("dst");
    const std::string symmetrical = lower(e.attribute("symmetrical"));
    const bool both_ways = !bypass && symmetrical != "no" && src != dst;
    auto declare_route = [&](const std::string& from, const std::string& to, bool reverse) {
      const auto [it, inserted] =
          routes.emplace(std::make_tuple(e.parent, from, to, bypass), std::make_pair(e.line, reverse));
      if (inserted) return;
      const bool symmetry = reverse || it->second.second;
      fail(e,
           fmt::format(
               "duplicate {} from '{}' to '{}' in this zone: line {} already declares it{}; SimGrid allows "
               "one per pair and direction",
               zone_route ? "zone route" : "route", from, to, it->second.first,
               symmetry ? " (routes are symmetrical: each also declares the way back, unless "
                          "symmetrical=\"NO\")"
                        : ""));
    };
    declare_route(src, dst, false);
    if (both_ways) declare_route(dst, src, true);
  }

  void check_zone_nesting(const XmlElement& e) {
    int zones = 0;
    for (int p = e.parent; p >= 0; p = elements[static_cast<std::size_t>(p)].parent) {
      const auto& name = elements[static_cast<std::size_t>(p)].name;
      if (name == "zone" || name == "AS") ++zones;
    }
    if (zones >= kMaxZoneNesting)
      fail(e, fmt::format("zones nested {} deep; aggsim accepts at most {} levels of <zone> (SimGrid 3.32 "
                          "corrupts its memory on a few hundred)",
                          zones + 1, kMaxZoneNesting));
  }

  void check(const XmlElement& e) {
    if (kElements.count(e.name) == 0)
      fail(e,
           "unknown element (SimGrid 3.32 platforms use zone, host, router, link, cluster, route, link_ctn, "
           "prop, "
           "...; see https://simgrid.org/simgrid.dtd)");
    check_values(e);
    if (e.name == "route" || e.name == "zoneRoute" || e.name == "ASroute" || e.name == "bypassRoute" ||
        e.name == "bypassZoneRoute" || e.name == "bypassASroute")
      check_route(e);
    if (e.name == "zone" || e.name == "AS") {
      check_zone_nesting(e);
      declare(netpoints, "zone", e.attribute("id"), e);
      const std::string routing = e.attribute("routing");
      if (!routing.empty() && kRoutings.count(lower(routing)) == 0)
        fail(e,
             fmt::format("unknown routing '{}' (Full | Floyd | Dijkstra | DijkstraCache | Cluster | None | "
                         "Vivaldi | Wifi)",
                         routing));
      if (for_ns3 && lower(routing) == "cluster")
        fail(e,
             "network ns3: SimGrid 3.32 does not give routing=\"Cluster\" (star) zones to ns-3; use Full or "
             "Floyd routing with one-link routes");
    } else if (e.name == "host" || e.name == "router") {
      declare(netpoints, e.name, e.attribute("id"), e);
    } else if (e.name == "link" || e.name == "backbone") {
      declare(links, "link", e.attribute("id"), e);
      // The DTD defaults it to 0, but SimGrid 3.32 then fails with "cannot parse number:".
      if (e.attributes.count("latency") == 0)
        fail(e, "needs a latency attribute (write latency=\"0\" for none)");
    } else if (e.name == "cluster") {
      declare(netpoints, "zone", e.attribute("id"), e);
      check_cluster(e);
    }
  }
};

// Malformed XML gets a precise line before SimGrid's parser sees it.
void check_well_formed(const std::string& text, const std::string& file) {
  boost::property_tree::ptree tree;
  std::istringstream in(text);
  try {
    boost::property_tree::read_xml(in, tree);
  } catch (const boost::property_tree::xml_parser_error& e) {
    throw InputError(fmt::format("{}:{}: malformed platform XML: {}", file, e.line(), e.message()));
  }
  if (tree.find("platform") == tree.not_found())
    throw InputError(fmt::format("{}: not a SimGrid platform (no <platform> root element)", file));
}

std::string read_text(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// What ns-3 can reach: SimGrid 3.32 hands it one-link routes (as cables between their ends) and
// flat clusters (hosts on a bus with the cluster's router), and ignores longer routes. A host
// joined to the others by nothing else is unreachable: ns-3 aborts on the first message to it.
void check_ns3_reachable(const std::string& file, const std::vector<XmlElement>& elements) {
  std::map<std::string, std::string> parent;
  std::function<std::string(const std::string&)> root = [&](const std::string& x) -> std::string {
    auto it = parent.find(x);
    if (it == parent.end() || it->second == x) return x;
    return it->second = root(it->second);
  };
  auto join = [&](const std::string& a, const std::string& b) { parent[root(a)] = root(b); };
  std::vector<const XmlElement*> hosts;
  std::vector<std::string> host_names;
  const XmlElement* long_route = nullptr;
  std::size_t long_route_links = 0;
  for (std::size_t i = 0; i < elements.size(); ++i) {
    const XmlElement& e = elements[i];
    if (e.name == "host") {
      hosts.push_back(&e);
      host_names.push_back(e.attribute("id"));
    } else if (e.name == "cluster") {
      const std::string router =
          e.attribute("router_id").empty()
              ? e.attribute("prefix") + e.attribute("id") + "_router" + e.attribute("suffix")
              : e.attribute("router_id");
      for (long r : expand_radical(e.attribute("radical"))) {
        hosts.push_back(&e);
        host_names.push_back(e.attribute("prefix") + std::to_string(r) + e.attribute("suffix"));
        join(host_names.back(), router);
      }
    } else if (e.name == "route" || e.name == "zoneRoute" || e.name == "ASroute") {
      std::size_t links = 0;
      while (i + links + 1 < elements.size() && elements[i + links + 1].name == "link_ctn") ++links;
      const bool zone = e.name != "route";
      if (links == 1) {
        join(e.attribute(zone ? "gw_src" : "src"), e.attribute(zone ? "gw_dst" : "dst"));
      } else if (!long_route) {
        long_route = &e;
        long_route_links = links;
      }
    }
  }
  for (std::size_t h = 1; h < hosts.size(); ++h) {
    if (root(host_names[h]) == root(host_names[0])) continue;
    std::string why = "SimGrid 3.32 gives ns-3 only routes of exactly one link";
    if (long_route)
      why += fmt::format(" (the <{}> at line {} has {} and is ignored)", long_route->name, long_route->line,
                         long_route_links);
    throw InputError(
        fmt::format("{}:{}: <{}>: network ns3: host '{}' cannot reach host '{}': {}; use network lv08 "
                    "or alpha_beta, or a generated cluster",
                    file, hosts[h]->line, hosts[h]->name, host_names[h], host_names[0], why));
  }
}

}  // namespace

void check_platform_xml(const std::string& file, bool for_ns3) {
  check_platform_xml_text(read_input_file(file, "platform"), file, for_ns3);
}

void check_platform_xml_text(const std::string& text, const std::string& file, bool for_ns3) {
  const auto elements = scan_xml_elements(text);
  // Before any recursive parser (Boost's, SimGrid's) sees the document.
  for (const auto& e : elements)
    if (e.depth >= kMaxXmlDepth)
      throw InputError(
          fmt::format("{}:{}: <{}>: elements nested {} deep; aggsim accepts platforms nested at most "
                      "{} deep",
                      file, e.line, e.name, e.depth + 1, kMaxXmlDepth));
  check_well_formed(text, file);
  Checker checker{file, for_ns3, elements, {}, {}, {}};
  for (const auto& e : elements) checker.check(e);
  if (for_ns3) check_ns3_reachable(file, elements);
}

std::string explain_simgrid_error(const std::string& file, const std::string& what) {
  std::smatch m;
  std::string text = what;
  // Route ends SimGrid cannot find: it lists every netpoint of the platform, which can be thousands.
  const auto listing = text.find(" Existing netpoints:");
  if (listing != std::string::npos) text.erase(listing);
  text = std::regex_replace(text, std::regex(R"(Route (src|dst)='([^']*)' does name a node\.)"),
                            "route $1 '$2' is not a host, router or zone of this platform");
  text = std::regex_replace(text, std::regex(R"(Invalid XML \(XML input line \d+, state \d+\): )"), "");
  if (std::regex_search(text, m, std::regex(R"(^Parse error at (.*):(\d+): ([\s\S]*)$)")))
    return fmt::format("{}:{}: {}", m[1].str(), m[2].str(), m[3].str());
  // Errors SimGrid raises without a line: point at the element that caused them.
  const auto elements = scan_xml_elements(read_text(file));
  if (std::regex_search(text, m, std::regex(R"(Link not found: (.*))"))) {
    for (const auto& e : elements)
      if (e.name == "link_ctn" && e.attribute("id") == m[1].str())
        return fmt::format("{}:{}: <link_ctn>: unknown link '{}'", file, e.line, m[1].str());
  }
  return fmt::format("{}: invalid platform: {}", file, text);
}

}  // namespace aggsim
