// output.trace: trace.json is a valid Chrome trace whose spans match the run, and links.csv's
// per-link bytes equal the traffic each host sent and received.
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "sweep_support.hpp"

using namespace aggsim::test;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr int kRanks = 4, kSteps = 2;
constexpr double kSize = 1e6, kAlpha = 2e-6, kBeta = 1.25e9;  // cluster: two 1 us links, 10 Gb/s

std::string traced_scenario(bool trace) {
  return fmt::format(R"(name: traced
seed: 9
ranks: {0}
steps: {1}
platform: {{topology: cluster, hosts: {0}, bandwidth: 10Gbps, latency: 1us}}
network: alpha_beta
model: {{size: 1MB, proxy_dim: 100}}
algorithm: {{name: ring_allreduce}}
output: {{trace: {2}}}
)",
                     kRanks, kSteps, trace ? "true" : "false");
}

fs::path run(const fs::path& dir, const std::string& name, bool trace) {
  write_file(dir / (name + ".yaml"), traced_scenario(trace));
  const auto r = run_aggsim({"run", (dir / (name + ".yaml")).string(), "--out", (dir / name).string(), "-q"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return dir / name;
}

}  // namespace

TEST_CASE("trace.json holds per-rank compute, aggregate, send and recv spans consistent with the run",
          "[trace]") {
  const auto dir = fresh_dir("trace");
  const fs::path out = run(dir, "a", true);
  const json trace = json::parse(read_file(out / "trace.json"));
  const json summary = json::parse(read_file(out / "summary.json"));
  REQUIRE(trace.contains("traceEvents"));
  REQUIRE(trace["traceEvents"].is_array());

  std::map<int, std::map<std::string, int>> spans;                              // rank -> name -> count
  std::map<int, std::uint64_t> sent, received;                                  // rank -> bytes
  std::map<int, std::vector<std::pair<double, double>>> aggregates;             // rank -> [start, end] in us
  std::map<std::pair<int, int>, std::vector<std::pair<double, double>>> lanes;  // (rank, tid) -> spans
  std::map<int, std::string> process_names, hosts;
  std::uint64_t total_sent = 0;
  for (const auto& e : trace["traceEvents"]) {
    REQUIRE(e.contains("name"));
    REQUIRE(e.contains("ph"));
    REQUIRE(e.contains("pid"));
    const int pid = e["pid"].get<int>();
    const std::string name = e["name"].get<std::string>();
    if (e["ph"] == "M") {
      if (name == "process_name") process_names[pid] = e["args"]["name"].get<std::string>();
      if (name == "process_labels") {  // one host per node here: the node is the host
        hosts[pid] = e["args"]["host"].get<std::string>();
        CHECK(e["args"]["node"] == hosts[pid]);
        CHECK(e["args"]["labels"] == hosts[pid]);
      }
      continue;
    }
    if (e["ph"] == "s" || e["ph"] == "f" || e["ph"] == "C")
      continue;  // flows and link counters: test_trace_flows
    REQUIRE(e["ph"] == "X");
    for (const char* field : {"ts", "dur", "tid", "cat", "args"}) REQUIRE(e.contains(field));
    const double ts = e["ts"].get<double>(), dur = e["dur"].get<double>();
    CHECK(dur >= 0);
    ++spans[pid][name];
    if (name == "aggregate") aggregates[pid].emplace_back(ts, ts + dur);
    if (name == "send" || name == "recv") {
      const auto bytes = e["args"]["bytes"].get<std::uint64_t>();
      const int peer = e["args"]["peer"].get<int>();
      // Ring: send right, receive from the left; each transfer alone on its links costs alpha + n/beta.
      CHECK(peer == (name == "send" ? (pid + 1) % kRanks : (pid + kRanks - 1) % kRanks));
      CHECK(dur == Approx((kAlpha + static_cast<double>(bytes) / kBeta) * 1e6).epsilon(1e-9));
      (name == "send" ? sent : received)[pid] += bytes;
      if (name == "send") total_sent += bytes;
      lanes[{pid, e["tid"].get<int>()}].emplace_back(ts, ts + dur);
    }
  }
  CHECK(total_sent == summary["bytes_sent"].get<std::uint64_t>());
  for (int r = 0; r < kRanks; ++r) {
    CHECK(process_names[r] == fmt::format("rank {}", r));
    CHECK(hosts[r] == fmt::format("host-{}", r));  // rank r on the r-th host
    CHECK(spans[r]["compute"] == kSteps);
    CHECK(spans[r]["aggregate"] == kSteps);
    CHECK(spans[r]["send"] == kSteps * 2 * (kRanks - 1));
    CHECK(spans[r]["recv"] == kSteps * 2 * (kRanks - 1));
    // Ring all-reduce: each rank sends and receives 2(p-1) chunks of S/p per step.
    CHECK(sent[r] == static_cast<std::uint64_t>(kSteps * 2 * (kRanks - 1) * kSize / kRanks));
    CHECK(received[r] == sent[r]);
  }
  // Spans of one lane never overlap, and every transfer happens inside an aggregation of its rank.
  for (auto& [key, list] : lanes) {
    std::sort(list.begin(), list.end());
    for (std::size_t i = 1; i < list.size(); ++i) CHECK(list[i].first >= list[i - 1].second - 1e-9);
    for (const auto& [s, e] : list) {
      bool inside = false;
      for (const auto& [as, ae] : aggregates[key.first]) inside |= s >= as - 1e-9 && e <= ae + 1e-9;
      CHECK(inside);
    }
  }

  SECTION("links.csv: each host link carries exactly what its host sent (up) and received (down)") {
    const auto rows = read_csv(out / "links.csv");
    const int link = column(rows, "link"), bw = column(rows, "bandwidth_Bps"), bytes = column(rows, "bytes"),
              util = column(rows, "utilisation"), load = column(rows, "simgrid_load_bytes");
    REQUIRE(std::min({link, bw, bytes, util, load}) >= 0);
    const double sim_time = summary["sim_time_s"].get<double>();
    int host_links = 0;
    for (std::size_t i = 1; i < rows.size(); ++i) {
      const auto& row = rows[i];
      const std::string name = row[static_cast<std::size_t>(link)];
      const auto b = std::stoull(row[static_cast<std::size_t>(bytes)]);
      int host = -1;
      char dir[8] = {0};
      if (std::sscanf(name.c_str(), "host-%d_link_%4s", &host, dir) != 2) {
        CHECK(b == 0);  // loopback
        continue;
      }
      ++host_links;
      CHECK(b == (std::string(dir) == "UP" ? sent[host] : received[host]));
      CHECK(std::stod(row[static_cast<std::size_t>(bw)]) == kBeta);
      CHECK(std::stod(row[static_cast<std::size_t>(util)]) == Approx(b / (kBeta * sim_time)).epsilon(1e-12));
      // SimGrid's integrated load covers the bytes, plus the latency phases (alpha per 2*alpha + n/beta).
      const double simgrid = std::stod(row[static_cast<std::size_t>(load)]);
      CHECK(simgrid >= static_cast<double>(b) * (1 - 1e-9));
      CHECK(simgrid <= static_cast<double>(b) * 1.02);
    }
    CHECK(host_links == 2 * kRanks);
  }
}

TEST_CASE("tracing is deterministic and changes no other output", "[trace]") {
  const auto dir = fresh_dir("trace-determinism");
  const fs::path a = run(dir, "a", true), b = run(dir, "b", true), off = run(dir, "off", false);
  CHECK(read_file(a / "trace.json") == read_file(b / "trace.json"));
  CHECK(read_file(a / "links.csv") == read_file(b / "links.csv"));
  // A traced run is never replayed (sim/engine/README.md, "Replay of repeated steps"): compare it with a run
  // that simulates every step too, and say why.
  write_file(dir / "full.yaml", traced_scenario(false) + "engine: {replay: false}\n");
  REQUIRE(
      run_aggsim({"run", (dir / "full.yaml").string(), "--out", (dir / "full").string(), "-q"}).exit_code ==
      0);
  CHECK(read_file(a / "steps.csv") == read_file(dir / "full" / "steps.csv"));
  json traced = json::parse(read_file(a / "summary.json")),
       full = json::parse(read_file(dir / "full" / "summary.json"));
  CHECK(traced["replay_refused"] == "output.trace: the trace records every transfer");
  CHECK(full["replay_refused"] == "engine.replay: false");
  traced.erase("replay_refused");
  full.erase("replay_refused");
  CHECK(traced == full);
  CHECK_FALSE(fs::exists(off / "trace.json"));
  CHECK_FALSE(fs::exists(off / "links.csv"));
  CHECK_THAT(read_file(a / "resolved.yaml"), Catch::Contains("trace: true"));
}

TEST_CASE("compression work appears as compress and decompress spans inside each aggregation", "[trace]") {
  const auto dir = fresh_dir("trace-compress");
  write_file(dir / "topk.yaml", R"(name: topk_traced
seed: 3
ranks: 4
steps: 2
platform: {topology: cluster, hosts: 4, bandwidth: 10Gbps, latency: 1us}
network: alpha_beta
model: {size: 4MB, proxy_dim: 256}
algorithm: {name: allgather}
compression: {name: topk, ratio: 0.01}
output: {trace: true}
)");
  const auto r = run_aggsim({"run", (dir / "topk.yaml").string(), "--out", (dir / "out").string(), "-q"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  std::map<int, std::vector<std::pair<double, double>>> aggregates;
  std::map<int, std::map<std::string, std::vector<std::pair<double, double>>>> work;
  const json trace = json::parse(read_file(dir / "out/trace.json"));
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] != "X") continue;
    const std::string name = e["name"].get<std::string>();
    const int pid = e["pid"].get<int>();
    const double ts = e["ts"].get<double>(), end = ts + e["dur"].get<double>();
    if (name == "aggregate") aggregates[pid].emplace_back(ts, end);
    if (name == "compress" || name == "decompress") {
      CHECK(e["tid"].get<int>() == 0);  // on the steps thread, nested in the aggregation
      work[pid][name].emplace_back(ts, end);
    }
  }
  for (int rank = 0; rank < 4; ++rank) {
    for (const char* name : {"compress", "decompress"}) {
      const auto& spans = work[rank][name];
      CHECK(spans.size() == 2);  // one per step
      for (std::size_t s = 0; s < spans.size() && s < aggregates[rank].size(); ++s) {
        CHECK(spans[s].second > spans[s].first);
        CHECK(spans[s].first >= aggregates[rank][s].first - 1e-9);
        CHECK(spans[s].second <= aggregates[rank][s].second + 1e-9);
      }
    }
  }
}
