// A call's record is the call: collectives.csv's start_s, end_s and time_s span everything a call
// costs (an NCCL call's base latency, its pipeline's fill and drain, its last hop, the reduction of
// what arrived last), so a step of one call and no compute lasts exactly as long as its call, which
// is also what summary.json and `aggsim perf` report; and the calls of consecutive steps follow one
// another in the record. Checked for NCCL's ring, tree, NVLS and NVLS-Tree with every protocol, at
// flow and chunk level, on nodes with one slow NIC (so ranks leave a call at different times), and
// for every other algorithm.
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "support/cli.hpp"
#include "support/csv.hpp"

using namespace aggsim::test;
namespace fs = std::filesystem;

namespace {

using Rows = std::vector<std::map<std::string, std::string>>;

Rows rows_of(const fs::path& csv) {
  return read_csv_rows(read_file(csv));
}

double number(const std::map<std::string, std::string>& row, const std::string& column) {
  INFO(column);
  REQUIRE(!row.at(column).empty());
  return std::stod(row.at(column));
}

bool near(double a, double b) {
  return std::abs(a - b) <= 1e-9 * std::max(std::abs(a), std::abs(b));
}

// Two nodes of four GPUs on a switch that reduces, two NICs each, one of them four times slower.
const char* kNodes =
    "{topology: cluster, nodes: 2, gpus_per_node: 4, nics_per_node: 2, nvswitch: true, bandwidth: 100Gbps, "
    "latency: 2us, overrides: [{nodes: 1, nic_bandwidth: 25Gbps}]}";
const char* kOneNode = "{topology: cluster, nodes: 1, gpus_per_node: 4, nvswitch: true}";

std::string scenario(const std::string& platform, int ranks, int steps, const std::string& size,
                     const std::string& algorithm) {
  return fmt::format(
      "name: record\nranks: {}\nsteps: {}\nplatform: {}\nmodel: {{size: {}, math: off}}\n"
      "compute: {{reduce_speed: 0}}\nalgorithm: {}\n",
      ranks, steps, platform, size, algorithm);
}

// Runs `yaml` for three steps and checks its records against its steps and summary.json; returns
// the records.
Rows check_records(const fs::path& dir, const std::string& yaml) {
  write_file(dir / "s.yaml", yaml);
  const auto r = run_aggsim({"run", "s.yaml", "--out", "out", "-q"}, dir);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const Rows calls = rows_of(dir / "out" / "collectives.csv");
  const Rows steps = rows_of(dir / "out" / "steps.csv");
  REQUIRE(calls.size() == steps.size());
  double sum = 0;
  for (std::size_t k = 0; k < calls.size(); ++k) {
    INFO("step " << k);
    const double start = number(calls[k], "start_s"), end = number(calls[k], "end_s"),
                 time = number(calls[k], "time_s");
    CHECK(near(time, end - start));
    CHECK(near(time, number(steps[k], "step_time_s")));
    CHECK(near(end, number(steps[k], "end_time_s")));
    if (k > 0) CHECK(start >= number(calls[k - 1], "end_s"));
    sum += time;
  }
  const auto summary = nlohmann::json::parse(read_file(dir / "out" / "summary.json"));
  CHECK(near(summary["collective_time_s"].get<double>(), sum / static_cast<double>(calls.size())));
  return calls;
}

// An all-reduce's bandwidths follow from its record (nccl-tests' busbw factor 2(p-1)/p), in
// collectives.csv and in summary.json.
void check_bandwidths(const fs::path& dir, const Rows& calls, int ranks) {
  const double factor = 2.0 * (ranks - 1) / ranks;
  double wire = 0, dense = 0, time = 0;
  for (const auto& call : calls) {
    CHECK(near(number(call, "busbw_GBps"), number(call, "wire_bytes") * factor / number(call, "time_s") / 1e9));
    CHECK(near(number(call, "algbw_GBps"), number(call, "dense_bytes") / number(call, "time_s") / 1e9));
    wire += number(call, "wire_bytes");
    dense += number(call, "dense_bytes");
    time += number(call, "time_s");
  }
  const auto summary = nlohmann::json::parse(read_file(dir / "out" / "summary.json"));
  CHECK(near(summary["busbw_GBps"].get<double>(), wire * factor / time / 1e9));
  CHECK(near(summary["algbw_GBps"].get<double>(), dense / time / 1e9));
}

}  // namespace

TEST_CASE("an NCCL call's record is the call, at flow and chunk level, and perf reports it",
          "[nccl][outputs]") {
  struct Case {
    std::string platform;
    int ranks;
    std::string size, algorithm, protocol, movement;
  };
  std::vector<Case> cases;
  for (const std::string movement : {"flow", "chunk"})
    for (const std::string algorithm : {"ring", "tree"}) {
      cases.push_back({kNodes, 8, "96KiB", algorithm, "ll", movement});
      cases.push_back({kNodes, 8, "3MiB", algorithm, "ll128", movement});
      cases.push_back({kNodes, 8, "1MiB", algorithm, "simple", movement});
      cases.push_back({kNodes, 8, "24MiB", algorithm, "simple", movement});
    }
  cases.push_back({kOneNode, 4, "16MiB", "nvls", "simple", "flow"});
  cases.push_back({kNodes, 8, "2MiB", "nvls_tree", "simple", "flow"});
  cases.push_back({kNodes, 8, "64MiB", "nvls_tree", "simple", "flow"});
  for (const Case& c : cases) {
    INFO(c.algorithm << " " << c.protocol << " " << c.size << " at " << c.movement << " level");
    const auto dir = fresh_dir("call-record");
    const std::string algorithm =
        fmt::format("{{name: nccl_allreduce, nccl_algorithm: {}, protocol: {}, movement: {}, op: sum}}",
                    c.algorithm, c.protocol, c.movement);
    const Rows calls = check_records(dir, scenario(c.platform, c.ranks, 3, c.size, algorithm));
    CHECK(calls.front().at("nccl_algorithm") == c.algorithm);
    CHECK(calls.front().at("protocol") == c.protocol);
    // aggsim perf at that size: the same call, the same number.
    const auto p = run_aggsim({"perf", "s.yaml", "--min", c.size, "--max", c.size, "--csv", "p.csv", "-j", "1"}, dir);
    INFO(p.err);
    REQUIRE(p.exit_code == 0);
    const Rows perf = rows_of(dir / "p.csv");
    REQUIRE(perf.size() == 1);
    CHECK(near(number(perf.front(), "time_s"), number(calls.front(), "time_s")));
    // perf prints its bandwidths to six digits.
    CHECK(std::abs(number(perf.front(), "busbw_GBps") / number(calls.front(), "busbw_GBps") - 1) < 1e-5);
    check_bandwidths(dir, calls, c.ranks);
    fs::remove_all(dir);
  }
}

TEST_CASE("a steady NCCL run with one slow NIC records each call as its step, one after the other",
          "[nccl][outputs]") {
  // Four nodes of eight GPUs, four NICs each, one of them ten times slower, NCCL's own choice: the
  // ranks behind the slow NIC leave each call last, and the others start the next call early.
  const std::string platform =
      "{topology: cluster, nodes: 4, gpus_per_node: 8, nics_per_node: 4, nvswitch: true, bandwidth: 400Gbps, "
      "overrides: [{nodes: 2, nic_bandwidth: 40Gbps}]}";
  for (const std::string size : {"1MiB", "256MiB"}) {
    INFO(size);
    const auto dir = fresh_dir("call-record");
    const Rows calls = check_records(dir, scenario(platform, 32, 5, size, "{name: nccl_allreduce}"));
    REQUIRE(calls.size() == 5);
    // Every call is the same call: its time and bandwidth do not drift from step to step.
    for (const auto& call : calls) CHECK(near(number(call, "time_s"), number(calls.front(), "time_s")));
    check_bandwidths(dir, calls, 32);
    fs::remove_all(dir);
  }
}

TEST_CASE("every algorithm's call record spans its step of one call, reductions included", "[outputs]") {
  // Reductions cost the hosts' time here (compute.reduce_speed: host), so a call that ends with one
  // (neighbour averaging, all-gather's local reduction) must count it.
  for (const std::string algorithm :
       {"{name: ring_allreduce}", "{name: halving_doubling_allreduce}", "{name: recursive_doubling_allreduce}",
        "{name: tree_allreduce, chunks: 3}", "{name: double_binary_tree_allreduce}",
        "{name: hierarchical_allreduce}", "{name: hierarchical_allreduce, inter: nccl}",
        "{name: torus2d_allreduce}", "{name: nccl_allreduce}", "{name: msccl, program: ring_allreduce_8}",
        "{name: allgather}", "{name: parameter_server, servers: 2}", "{name: neighbor_averaging}",
        "{name: gossipgrad}"}) {
    INFO(algorithm);
    const auto dir = fresh_dir("call-record");
    std::string yaml = scenario(kNodes, 8, 3, "4MB", algorithm);
    yaml.replace(yaml.find("reduce_speed: 0"), 15, "reduce_speed: host");
    check_records(dir, yaml);
    fs::remove_all(dir);
  }
}
