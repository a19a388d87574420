#include "sim/platform/xml_check.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <strings.h>

#include <algorithm>
#include <boost/property_tree/detail/rapidxml.hpp>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <tuple>

#include "sim/core/checked.hpp"
#include "sim/core/error.hpp"
#include "sim/core/input_file.hpp"
#include "sim/core/strings.hpp"
#include "sim/core/units.hpp"
#include "sim/platform/platform.hpp"

namespace aggsim {

std::vector<XmlElement> scan_xml_elements(const std::string& text) {
  std::vector<XmlElement> out;
  std::vector<int> open;  // indices of the elements not closed yet
  int line = 1;
  std::size_t i = 0, line_start = 0;
  // Moves to `end` (exclusive of what follows), counting lines on the way.
  auto advance_to = [&](std::size_t end) {
    for (; i < end && i < text.size(); ++i)
      if (text[i] == '\n') ++line, line_start = i + 1;
  };
  // Characters (not UTF-8 continuation bytes) from the start of the line to position i, plus one.
  auto column_here = [&] {
    int col = 1;
    for (std::size_t k = line_start; k < i; ++k) col += (static_cast<unsigned char>(text[k]) & 0xC0) != 0x80;
    return col;
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
    e.column = column_here();
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

// Cores per host: far above any real host, far below where speed x cores stops being a number.
constexpr long long kMaxCores = 1 << 16;

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
    throw InputError(fmt::format("{}:{}:{}: <{}>: {}", file, e.line, e.column, e.name, message));
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
    // SimGrid reads a radical leniently (std::stoi: "1e308GBps" is host 1), then aborts when a
    // topology needs more hosts than it got: a radical must be what it looks like.
    if (radicals.empty())
      fail(e, fmt::format("radical=\"{}\": must be numbers and ranges separated by commas, such as 0-15,20 "
                          "(numbers below 10^9, each range from low to high)",
                          e.attribute("radical")));
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
      if (leaves != static_cast<long>(radicals.size()))
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
  enum class Quantity { bandwidth, latency, speed };

  // Bandwidths, latencies and speeds SimGrid divides by or would run backwards in time with, and
  // rates below the slowest aggsim simulates (sim/core/units.hpp). Wifi links and multi-pstate hosts
  // list several values separated by commas: each is checked.
  void check_quantity(const XmlElement& e, const std::string& attribute, Quantity kind) {
    const auto it = e.attributes.find(attribute);
    if (it == e.attributes.end()) return;
    const bool zero_allowed = kind == Quantity::latency;
    for (const std::string& part : split_list(it->second)) {
      const auto v = leading_number(part);
      if (!v) continue;  // SimGrid reports a value that is no number itself, with its line
      if (!std::isfinite(*v) || *v < 0 || (*v == 0 && !zero_allowed))
        fail(e, fmt::format("{}=\"{}\": must be a {} finite number", attribute, it->second,
                            zero_allowed ? "non-negative" : "positive"));
      double value = 0;
      try {
        value = kind == Quantity::bandwidth ? units::parse_bandwidth(part)
                : kind == Quantity::speed   ? units::parse_speed(part)
                                            : units::parse_duration(part);
      } catch (const std::invalid_argument&) {
        continue;  // a unit SimGrid does not know: it says so itself
      }
      if (!std::isfinite(value))
        fail(e, fmt::format("{}=\"{}\": is too large to be a finite number with its unit", attribute,
                            it->second));
      if (kind == Quantity::bandwidth && value < units::kMinBandwidth)
        fail(e,
             fmt::format("{}=\"{}\": must be at least 1Bps (8bps), the slowest link aggsim simulates: below "
                         "it SimGrid's solver loses transfers or a step outlasts its clock",
                         attribute, it->second));
      if (kind == Quantity::speed && value < units::kMinSpeed)
        fail(e, fmt::format("{}=\"{}\": must be at least 1f (one flop per second), the slowest host aggsim "
                            "simulates: below it a step can outlast the simulated clock",
                            attribute, it->second));
    }
  }

  // A count SimGrid 3.32 reads with std::stoi: it takes the leading digits ("1.5" -> 1, "2x" -> 2,
  // "abc" ends the load with "abc is not an int", beyond an int with "stoi"). aggsim accepts only
  // a whole number, spaces around it allowed, that fits an int.
  static std::optional<long long> whole_int(const std::string& text) {
    std::size_t begin = 0, end = text.size();
    while (begin < end && std::isspace(static_cast<unsigned char>(text[begin]))) ++begin;
    while (end > begin && std::isspace(static_cast<unsigned char>(text[end - 1]))) --end;
    if (begin < end && text[begin] == '+') ++begin;
    const auto v = parse_integer_text<int>(std::string_view(text).substr(begin, end - begin));
    if (!v) return std::nullopt;
    return *v;
  }

  // SimGrid 3.32 asserts on zero or negative cores and on a pstate past the host's speeds: those
  // abort the whole process (exit 134) in validate as in run.
  void check_counts(const XmlElement& e) {
    if ((e.name == "host" || e.name == "cluster") && e.attributes.count("core")) {
      const auto core = whole_int(e.attribute("core"));
      if (!core || *core < 1 || *core > kMaxCores)
        fail(e, fmt::format("core=\"{}\": must be a whole number of cores from 1 to {}", e.attribute("core"),
                            kMaxCores));
    }
    if (e.name == "host" && e.attributes.count("pstate")) {
      const std::size_t speeds = split_list(e.attribute("speed")).size();
      const auto pstate = whole_int(e.attribute("pstate"));
      if (!pstate || *pstate < 0 || *pstate >= static_cast<long long>(speeds))
        fail(e, fmt::format(
                    "pstate=\"{}\": must be a whole number naming one of the host's {} speed(s) (0 to {})",
                    e.attribute("pstate"), speeds, speeds - 1));
    }
    if (e.name == "platform" && e.attributes.count("version")) {
      const auto v = leading_number(e.attribute("version"));
      if (v && !std::isfinite(*v))
        fail(e, fmt::format("version=\"{}\": must be a version number such as 4.1", e.attribute("version")));
    }
  }

  // Files and programs a platform could name: SimGrid 3.32 reads profile files itself and aborts the
  // process on one it cannot parse (printing its lines), includes other XML files past these checks,
  // and starts deployment actors that aggsim has no code for.
  void check_not_referenced(const XmlElement& e) {
    if (e.name == "include" || e.name == "trace" || e.name == "trace_connect")
      fail(e,
           "profiles and included files are not supported: SimGrid 3.32 reads them past aggsim's checks and "
           "aborts on a malformed one; write the platform as one file with constant values");
    if (e.name == "actor" || e.name == "process" || e.name == "argument")
      fail(e,
           "deployment elements do not belong in an aggsim platform: aggsim starts the ranks' actors itself");
    for (const char* file :
         {"speed_file", "availability_file", "state_file", "bandwidth_file", "latency_file"})
      if (e.attributes.count(file))
        fail(e,
             fmt::format("{}: profile files are not supported: SimGrid 3.32 reads them past aggsim's checks "
                         "and aborts on a malformed one; give constant values",
                         file));
  }

  void check_values(const XmlElement& e) {
    for (const char* bw : {"bandwidth", "bw", "bb_bw", "loopback_bw", "bw_in", "bw_out", "limiter_link",
                           "read_bw", "write_bw"})
      check_quantity(e, bw, Quantity::bandwidth);
    for (const char* lat : {"latency", "lat", "bb_lat", "loopback_lat"})
      check_quantity(e, lat, Quantity::latency);
    if (e.name == "host" || e.name == "cluster" || e.name == "peer" || e.name == "cabinet")
      check_quantity(e, "speed", Quantity::speed);
    check_counts(e);
    check_not_referenced(e);
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
    if (e.name == "prop")
      if (const std::string error = host_property_error(e.attribute("id"), e.attribute("value")); !error.empty())
        fail(e, error);
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

// Line and column (in characters) of byte `offset` of `text`.
std::pair<int, int> position_of(const std::string& text, std::size_t offset) {
  int line = 1, col = 1;
  for (std::size_t k = 0; k < offset && k < text.size(); ++k) {
    if (text[k] == '\n') {
      ++line;
      col = 1;
    } else if ((static_cast<unsigned char>(text[k]) & 0xC0) != 0x80) {
      ++col;
    }
  }
  return {line, col};
}

// Malformed XML gets a precise line and column before SimGrid's parser sees it. rapidxml (Boost's
// copy, which Boost's own XML reader uses) reports where it stopped; its messages hold no text of
// the document.
void check_well_formed(const std::string& text, const std::string& file) {
  namespace rx = boost::property_tree::detail::rapidxml;
  std::vector<char> buffer(text.begin(), text.end());
  buffer.push_back('\0');
  rx::xml_document<char> doc;
  try {
    // Boost's XML reader's flags, plus closing tags checked against their opening tag (an end tag
    // that does not match would otherwise reach SimGrid, which reports no column).
    doc.parse<rx::parse_comment_nodes | rx::parse_validate_closing_tags>(buffer.data());
  } catch (const rx::parse_error& e) {
    const char* where = e.where<char>();
    const std::size_t offset = where ? static_cast<std::size_t>(where - buffer.data()) : 0;
    const auto [line, col] = position_of(text, offset);
    throw InputError(fmt::format("{}:{}:{}: malformed platform XML: {}", file, line, col, e.what()));
  }
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
    throw InputError(fmt::format(
        "{}:{}:{}: <{}>: network ns3: host '{}' cannot reach host '{}': {}; use network lv08 "
        "or alpha_beta, or a generated cluster",
        file, hosts[h]->line, hosts[h]->column, hosts[h]->name, host_names[h], host_names[0], why));
  }
}

}  // namespace

void check_platform_xml(const std::string& file, bool for_ns3) {
  check_platform_xml_text(read_input_file(file, "platform"), file, for_ns3);
}

void check_platform_xml_text(const std::string& text, const std::string& file, bool for_ns3) {
  const auto elements = scan_xml_elements(text);
  // Whether this is a platform at all, before any message may show a name or a value from it.
  const auto root =
      std::find_if(elements.begin(), elements.end(), [](const XmlElement& e) { return e.depth == 0; });
  if (root == elements.end() || root->name != "platform")
    throw InputError(
        fmt::format("{}:{}:{}: not a SimGrid platform: {}; the file's text is not shown", file,
                    root == elements.end() ? 1 : root->line, root == elements.end() ? 1 : root->column,
                    root == elements.end() ? "no XML element found" : "the root element is not <platform>"));
  // Before any recursive parser (rapidxml, SimGrid's) sees the document.
  for (const auto& e : elements)
    if (e.depth >= kMaxXmlDepth)
      throw InputError(
          fmt::format("{}:{}:{}: <{}>: elements nested {} deep; aggsim accepts platforms nested at most "
                      "{} deep",
                      file, e.line, e.column, e.name, e.depth + 1, kMaxXmlDepth));
  check_well_formed(text, file);
  Checker checker{file, for_ns3, elements, {}, {}, {}};
  for (const auto& e : elements) checker.check(e);
  if (for_ns3) check_ns3_reachable(file, elements);
}

namespace {

// Replaces every "BEFORE<x>AFTER" by "INTO_BEFORE<x>INTO_AFTER", <x> holding no quote.
std::string reword(std::string text, const std::string& before, const std::string& after,
                   const std::string& into_before, const std::string& into_after) {
  for (std::size_t at = text.find(before); at != std::string::npos; at = text.find(before, at)) {
    const std::size_t from = at + before.size(), end = text.find(after, from);
    if (end == std::string::npos) break;
    const std::string inner = text.substr(from, end - from);
    text.replace(at, end + after.size() - at, into_before + inner + into_after);
    at += into_before.size() + inner.size() + into_after.size();
  }
  return text;
}

}  // namespace

// No regular expressions: SimGrid's messages repeat names from the platform, which may be long.
std::string explain_simgrid_error(const std::string& file, const std::string& what) {
  std::string text = what;
  // Route ends SimGrid cannot find: it lists every netpoint of the platform, which can be thousands.
  const auto listing = text.find(" Existing netpoints:");
  if (listing != std::string::npos) text.erase(listing);
  for (const char* end : {"src", "dst"})
    text = reword(text, fmt::format("Route {}='", end), "' does name a node.", fmt::format("route {} '", end),
                  "' is not a host, router or zone of this platform");
  if (const auto at = text.find("Invalid XML (XML input line "); at != std::string::npos)
    if (const auto close = text.find("): ", at); close != std::string::npos) text.erase(at, close + 3 - at);
  // SimGrid's lexer accepts a platform only after its DOCTYPE line, and says so obscurely.
  if (text.find("in prolog") != std::string::npos ||
      text.find("Bad declaration <!DOCTYPE") != std::string::npos)
    text +=
        " (a SimGrid 3.32 platform begins with <?xml version='1.0'?> and then <!DOCTYPE platform SYSTEM "
        "\"https://simgrid.org/simgrid.dtd\">)";
  std::replace(text.begin(), text.end(), '\n', ' ');  // one line, not an escaped line break
  std::vector<XmlElement> elements;
  try {
    elements = scan_xml_elements(read_input_file(file, "platform"));
  } catch (const InputError&) {
  }
  // The column of the first element on `line` (SimGrid reports lines only).
  auto column_on = [&](long line) {
    for (const auto& e : elements)
      if (e.line == line) return e.column;
    return 1;
  };
  const std::string parse_error = "Parse error at " + file + ":";
  if (text.rfind(parse_error, 0) == 0) {
    std::size_t i = parse_error.size();
    const std::size_t digits = i;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
    const auto line = parse_integer_text<long>(std::string_view(text).substr(digits, i - digits));
    if (line && text.compare(i, 2, ": ") == 0)
      return fmt::format("{}:{}:{}: {}", file, *line, column_on(*line), text.substr(i + 2));
  }
  // Errors SimGrid raises without a line: point at the element that caused them.
  const std::string link_not_found = "Link not found: ";
  if (const auto at = text.find(link_not_found); at != std::string::npos) {
    std::string id = text.substr(at + link_not_found.size());
    id = id.substr(0, id.find('\n'));
    for (const auto& e : elements)
      if (e.name == "link_ctn" && e.attribute("id") == id)
        return fmt::format("{}:{}:{}: <link_ctn>: unknown link '{}'", file, e.line, e.column, id);
  }
  const auto root =
      std::find_if(elements.begin(), elements.end(), [](const XmlElement& e) { return e.depth == 0; });
  return fmt::format("{}:{}:{}: invalid platform: {}", file, root == elements.end() ? 1 : root->line,
                     root == elements.end() ? 1 : root->column, text);
}

}  // namespace aggsim
