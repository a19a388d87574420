// trace.json as Perfetto reads it: one flow (arrow) per message from its send slice to its receive
// slice, and counter tracks of link load whose integral over time equals links.csv's bytes; and
// links.csv's end_a, end_b and tier columns. Read with an RFC 4180 parser (support/csv.hpp).
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <set>

#include "sim/engine/simulation.hpp"
#include "sim/platform/link_places.hpp"
#include "sim/scenario/scenario_loader.hpp"
#include "support/cli.hpp"
#include "support/csv.hpp"
#include "support/isolated.hpp"

using namespace aggsim::test;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

struct Slice {
  std::string name;
  double start, end;
  json args;
};

fs::path run_traced(const fs::path& dir, const std::string& name, const std::string& body) {
  write_file(dir / (name + ".yaml"),
             fmt::format("name: {}\nsteps: 2\noutput: {{trace: true}}\n{}", name, body));
  const auto r = run_aggsim({"run", (dir / (name + ".yaml")).string(), "--out", (dir / name).string(), "-q"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return dir / name;
}

std::map<std::string, std::map<std::string, std::string>> links_by_name(const fs::path& out) {
  const auto rows = parse_csv(read_file(out / "links.csv"));
  std::map<std::string, std::map<std::string, std::string>> links;
  for (std::size_t i = 1; i < rows.size(); ++i) {
    REQUIRE(rows[i].size() == rows[0].size());
    for (std::size_t c = 0; c < rows[0].size(); ++c) links[rows[i][0]][rows[0][c]] = rows[i][c];
  }
  return links;
}

// The slice of `slices` that encloses `ts` (inclusive bounds), or null.
const Slice* enclosing(const std::vector<Slice>& slices, double ts) {
  for (const auto& s : slices)
    if (s.start <= ts && ts <= s.end) return &s;
  return nullptr;
}

// Every route between two rank hosts, walked link by link: it leaves the source host, each link
// starts where the one before it ended, and it arrives at the destination host. Links whose ends
// are unknown (dragonfly chassis, group and global links) break the walk, which resumes after them.
std::string route_walk_errors(const std::string& platform, int ranks) {
  return run_isolated([&] {
    const aggsim::Scenario sc = aggsim::load_scenario_text(
        fmt::format("ranks: {}\nplatform: {}\nmodel: {{size: 1MB}}\nalgorithm: {{name: ring_allreduce}}\n",
                    ranks, platform),
        "walk.yaml");
    aggsim::PreparedRun prepared(sc, {}, false);
    const auto places = aggsim::link_places(sc.platform, *prepared.engine, prepared.hosts);
    std::string errors;
    int walked = 0;
    for (const auto* from : prepared.hosts)
      for (const auto* to : prepared.hosts) {
        if (from == to) continue;
        std::vector<simgrid::s4u::Link*> route;
        from->route_to(to, route, nullptr);
        std::string at = from->get_name();
        for (const auto* link : route) {
          const auto& place = places.at(link->get_name());
          if (place.end_a.empty()) {
            at.clear();
            continue;
          }
          if (!at.empty() && place.end_a != at)
            errors += fmt::format("{} -> {}: {} starts at {}, not {}\n", from->get_name(), to->get_name(),
                                  link->get_name(), place.end_a, at);
          at = place.end_b;
          ++walked;
        }
        if (at != to->get_name())
          errors += fmt::format("{} -> {}: the route ends at {}\n", from->get_name(), to->get_name(), at);
      }
    return walked > 0 ? errors : std::string("no link walked");
  });
}

void check_flows_and_counters(const fs::path& out) {
  const json trace = json::parse(read_file(out / "trace.json"));
  const json summary = json::parse(read_file(out / "summary.json"));
  std::map<std::pair<int, int>, std::vector<Slice>> slices;                // (pid, tid) -> X events
  std::map<std::uint64_t, std::vector<json>> flows;                        // id -> its s and f events
  std::map<std::string, std::vector<std::pair<double, double>>> counters;  // link -> (ts us, bytes/s)
  for (const auto& e : trace["traceEvents"]) {
    const std::string ph = e["ph"];
    if (ph == "X")
      slices[{e["pid"].get<int>(), e["tid"].get<int>()}].push_back(
          {e["name"], e["ts"].get<double>(), e["ts"].get<double>() + e["dur"].get<double>(), e["args"]});
    else if (ph == "s" || ph == "f")
      flows[e["id"].get<std::uint64_t>()].push_back(e);
    else if (ph == "C")
      counters[e["name"].get<std::string>()].emplace_back(e["ts"].get<double>(),
                                                          e["args"]["bytes_per_s"].get<double>());
  }

  // One flow per message, each exactly one start and one finish, bound inside the right slices.
  CHECK(flows.size() == summary["messages"].get<std::uint64_t>());
  std::uint64_t flow_bytes = 0;
  for (const auto& [id, events] : flows) {
    REQUIRE(events.size() == 2);
    const json& s = events[0]["ph"] == "s" ? events[0] : events[1];
    const json& f = events[0]["ph"] == "s" ? events[1] : events[0];
    REQUIRE(s["ph"] == "s");
    REQUIRE(f["ph"] == "f");
    CHECK(f["bp"] == "e");
    CHECK(s["cat"] == f["cat"]);
    CHECK(s["name"] == f["name"]);
    CHECK(f["ts"].get<double>() >= s["ts"].get<double>());
    const int sender = s["pid"], receiver = f["pid"];
    const Slice* send = enclosing(slices[{sender, s["tid"].get<int>()}], s["ts"].get<double>());
    const Slice* recv = enclosing(slices[{receiver, f["tid"].get<int>()}], f["ts"].get<double>());
    REQUIRE(send);
    REQUIRE(recv);
    CHECK(send->name == "send");
    CHECK(recv->name == "recv");
    CHECK(send->args["peer"].get<int>() == receiver);
    CHECK(recv->args["peer"].get<int>() == sender);
    CHECK(send->args["bytes"] == recv->args["bytes"]);
    flow_bytes += send->args["bytes"].get<std::uint64_t>();
  }
  CHECK(flow_bytes == summary["bytes_sent"].get<std::uint64_t>());

  // Counter tracks: integrated over time (a step function, microseconds) they give each link's bytes.
  // Tolerance 1e-9 relative: the per-message rates are summed in floating point.
  const auto links = links_by_name(out);
  int loaded = 0;
  for (const auto& [name, row] : links) {
    const double bytes = std::stod(row.at("bytes"));
    const auto it = counters.find(name);
    if (bytes == 0) {
      CHECK(it == counters.end());
      continue;
    }
    REQUIRE(it != counters.end());
    ++loaded;
    const auto& points = it->second;
    double integral = 0;
    for (std::size_t i = 0; i + 1 < points.size(); ++i) {
      CHECK(points[i + 1].first > points[i].first);
      CHECK(points[i].second >= 0);
      integral += points[i].second * (points[i + 1].first - points[i].first) * 1e-6;
    }
    CHECK(points.back().second == 0);  // idle after its last message
    CHECK(integral == Approx(bytes).epsilon(1e-9));
  }
  CHECK(loaded > 0);
  CHECK(counters.size() == static_cast<std::size_t>(loaded));
}

}  // namespace

TEST_CASE(
    "every message is one flow from its send to its receive and link counters integrate to links.csv bytes",
    "[trace]") {
  const auto dir = fresh_dir("trace-flows");
  SECTION("ring on a cluster") {
    check_flows_and_counters(run_traced(dir, "ring", R"(ranks: 6
platform: {topology: cluster, hosts: 6, bandwidth: 10Gbps, latency: 1us}
model: {size: 1MB, proxy_dim: 60}
algorithm: {name: ring_allreduce}
)"));
  }
  SECTION("hierarchical on a fat tree of two-GPU nodes (multi-hop routes, shared links)") {
    check_flows_and_counters(run_traced(dir, "hier", R"(ranks: 8
platform: {topology: fat_tree, nodes: 4, gpus_per_node: 2}
model: {size: 1MB, proxy_dim: 64}
algorithm: {name: hierarchical_allreduce}
)"));
  }
  SECTION("asynchronous parameter server (messages outstanding across steps)") {
    check_flows_and_counters(run_traced(dir, "ps", R"(ranks: 5
platform: {topology: cluster, hosts: 5}
model: {size: 1MB, proxy_dim: 40}
algorithm: {name: parameter_server, asynchronous: true, staleness: 1}
)"));
  }
  SECTION("XML platform") {
    check_flows_and_counters(run_traced(dir, "xml", R"(ranks: 4
platform: {file: platforms/cluster_16.xml}
model: {size: 1MB, proxy_dim: 40}
algorithm: {name: halving_doubling_allreduce}
)"));
  }
}

TEST_CASE("links.csv names each link's ends and tier and consecutive links of every route meet", "[trace]") {
  const auto dir = fresh_dir("trace-link-ends");
  struct Case {
    std::string name, platform;
    int ranks;
  };
  const std::vector<Case> cases = {
      {"cluster", "{topology: cluster, hosts: 4}", 4},
      {"cluster_gpus", "{topology: cluster, nodes: 2, gpus_per_node: 2, backbone_bandwidth: 100Gbps}", 4},
      {"fat_tree", "{topology: fat_tree, nodes: 8}", 8},
      {"fat_tree3", "{topology: fat_tree, nodes: 8, levels: 3, gpus_per_node: 2}", 16},
      {"torus", "{topology: torus, nodes: 8}", 8},
      {"dragonfly", "{topology: dragonfly, nodes: 8}", 8},
  };
  const std::set<std::string> tiers = {"loopback", "intra_node", "nic",     "edge",  "aggregation",
                                       "core",     "torus",      "chassis", "group", "global"};
  for (const auto& c : cases) {
    DYNAMIC_SECTION(c.name) {
      const fs::path out = run_traced(
          dir, c.name,
          fmt::format("ranks: {}\nplatform: {}\nmodel: {{size: 1MB, proxy_dim: 32}}\nalgorithm: {{name: "
                      "ring_allreduce}}\n",
                      c.ranks, c.platform));
      const auto links = links_by_name(out);
      const auto header = parse_csv(read_file(out / "links.csv")).at(0);
      // The existing columns first, unchanged, then the new ones.
      CHECK(header == std::vector<std::string>{"link", "bandwidth_Bps", "latency_s", "bytes", "utilisation",
                                               "peak_utilisation", "simgrid_load_bytes", "end_a", "end_b",
                                               "tier"});
      std::set<std::string> rank_hosts;
      for (const auto& [name, row] : links) {
        INFO(name);
        CHECK(tiers.count(row.at("tier")) == 1);
        const bool named_ends = row.at("tier") != "loopback" && row.at("tier") != "chassis" &&
                                row.at("tier") != "group" && row.at("tier") != "global";
        if (named_ends) {
          CHECK_FALSE(row.at("end_a").empty());
          CHECK_FALSE(row.at("end_b").empty());
          CHECK((row.at("end_a") != row.at("end_b") || row.at("tier") == "core"));
        }
        // Every rank host is the end of some link.
        for (const auto& end : {row.at("end_a"), row.at("end_b")})
          if (end.rfind("host-", 0) == 0 || end.find("-gpu-") != std::string::npos) rank_hosts.insert(end);
      }
      CHECK(rank_hosts.size() == static_cast<std::size_t>(c.ranks));
      CHECK(route_walk_errors(c.platform, c.ranks) == "");
    }
  }
}
