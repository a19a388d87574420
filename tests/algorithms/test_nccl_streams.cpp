// nccl_allreduce's flow-level streams: `streams: per_pair` (one SimGrid transfer per pair of
// members, carrying its channels' bytes at the sum of their rates) against `per_channel` (one per
// channel edge, the reference). Where the network grants every stream its paced rate (alpha_beta)
// both end each call at the same time up to rounding, over generated cases across platforms,
// algorithms, protocols, channel counts, sizes and collectives; `auto` merges only there (under
// LV08 it is per_channel byte for byte); and merging cuts the transfers as counted in the trace.
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "support/cli.hpp"
#include "support/csv.hpp"

using namespace aggsim;
using namespace aggsim::test;

namespace {

struct StreamCase {
  std::string platform;
  int ranks;
  std::string network;
  std::string keys;  // the algorithm's keys beside its name
  std::string size;
  bool trace = false;
};

std::string case_yaml(const StreamCase& c, const std::string& streams) {
  return fmt::format(
      "name: streams\nseed: 1\nranks: {}\nsteps: 2\nplatform: {}\nnetwork: {}\nmodel: {{size: {}, math: off}}\n"
      "algorithm: {{name: nccl_allreduce, streams: {}{}}}\ncompute: {{reduce_speed: 0}}\n{}",
      c.ranks, c.platform, c.network, c.size, streams, c.keys, c.trace ? "output: {trace: true}\n" : "");
}

struct Outcome {
  std::vector<std::map<std::string, std::string>> calls;
  nlohmann::json summary;
  std::string collectives;
  int trace_streams = 0;  // transfers the trace shows, send side
};

// `refused` (optional): set when aggsim refuses the case (a combination NCCL cannot run there),
// instead of failing.
Outcome run_case(const StreamCase& c, const std::string& streams, bool* refused = nullptr) {
  const auto dir = fresh_dir("nccl-streams");
  write_file(dir / "s.yaml", case_yaml(c, streams));
  const auto r = run_aggsim({"run", "s.yaml", "--out", "out", "-q"}, dir);
  INFO(case_yaml(c, streams) << r.err);
  Outcome o;
  if (refused) *refused = r.exit_code != 0;
  if (refused && *refused) {
    std::filesystem::remove_all(dir);
    return o;
  }
  REQUIRE(r.exit_code == 0);
  o.collectives = read_file(dir / "out" / "collectives.csv");
  o.calls = read_csv_rows(o.collectives);
  o.summary = nlohmann::json::parse(read_file(dir / "out" / "summary.json"));
  if (c.trace) {
    const auto trace = nlohmann::json::parse(read_file(dir / "out" / "trace.json"));
    for (const auto& e : trace.at("traceEvents"))
      if (e.value("name", "") == "stream out") ++o.trace_streams;
  }
  std::filesystem::remove_all(dir);
  return o;
}

// Generated cases: each platform with algorithms, protocols, channel counts, sizes and collectives
// drawn from a fixed seed (NCCL's own choice among them).
std::vector<StreamCase> generated_cases(const std::string& network) {
  const std::vector<std::pair<std::string, int>> platforms = {
      {"{system: dgx_h100, nodes: 3}", 24},
      {"{topology: cluster, nodes: 4, gpus_per_node: 4, nvswitch: true, intra_bandwidth: 450GBps, "
       "bandwidth: 100Gbps, latency: 2us}",
       16},
      {"{topology: fat_tree, nodes: 6, gpus_per_node: 4, intra_bandwidth: 150GBps, nics_per_node: 2, "
       "nic_bandwidth: 200Gbps, bandwidth: 100Gbps, latency: 1us}",
       24},
      {"{system: mi300x, nodes: 2}", 16},
      {"{topology: torus, nodes: 8, gpus_per_node: 2, bandwidth: 50Gbps, latency: 1us}", 16},
  };
  const std::vector<std::string> algorithms = {"auto", "ring", "tree", "nvls", "nvls_tree"};
  const std::vector<std::string> protocols = {"auto", "ll", "ll128", "simple"};
  const std::vector<std::string> channels = {"auto", "3", "7", "12", "24"};
  const std::vector<std::string> sizes = {"333KiB", "1MiB", "37MB", "100MiB"};
  const std::vector<std::string> collectives = {"all_reduce", "all_reduce", "reduce_scatter", "all_gather",
                                                "broadcast"};
  std::mt19937 pick(50);
  const auto any = [&](const std::vector<std::string>& v) { return v[pick() % v.size()]; };
  std::vector<StreamCase> cases;
  for (const auto& [platform, ranks] : platforms)
    for (const auto& a : algorithms)
      for (int draw = 0; draw < 2; ++draw)  // two draws each: NVLS and NVLS-Tree are refused off Hopper's switch
        cases.push_back({platform, ranks, network,
                         fmt::format(", nccl_algorithm: {}, protocol: {}, channels: {}, collective: {}", a,
                                     any(protocols), any(channels), any(collectives)),
                         any(sizes)});
  return cases;
}

}  // namespace

TEST_CASE("streams: per_pair ends every call when per_channel does, up to rounding, where rates are granted",
          "[nccl][streams]") {
  int compared = 0;
  for (const StreamCase& c : generated_cases("alpha_beta")) {
    bool refused = false;
    const Outcome a = run_case(c, "per_channel", &refused);
    if (refused) continue;  // a combination NCCL refuses (an algorithm the platform cannot run)
    const Outcome b = run_case(c, "per_pair");
    INFO(case_yaml(c, "per_pair"));
    REQUIRE(a.calls.size() == b.calls.size());
    for (std::size_t i = 0; i < a.calls.size(); ++i) {
      CHECK(a.calls[i].at("nccl_algorithm") == b.calls[i].at("nccl_algorithm"));
      for (const char* key : {"start_s", "end_s", "time_s"}) {
        const double x = std::stod(a.calls[i].at(key)), y = std::stod(b.calls[i].at(key));
        CHECK(std::abs(x - y) <= 1e-12 * std::stod(a.calls[i].at("time_s")));
      }
    }
    // A merged stream counts the messages it stands for: the counters are the reference's.
    CHECK(a.summary.at("messages") == b.summary.at("messages"));
    CHECK(a.summary.at("bytes_sent") == b.summary.at("bytes_sent"));
    ++compared;
  }
  CHECK(compared >= 20);  // 22 of the 50 generated run; the rest are refused where NCCL cannot run them
}

TEST_CASE("streams: auto is per_channel byte for byte under LV08 and per_pair under alpha_beta",
          "[nccl][streams]") {
  // few_pieces: flow: a tree of so few pieces a channel would otherwise move piece by piece, no streams.
  const StreamCase lv08{"{system: dgx_h100, nodes: 2}", 16, "lv08",
                        ", nccl_algorithm: tree, channels: 12, few_pieces: flow", "100MiB"};
  CHECK(run_case(lv08, "auto").collectives == run_case(lv08, "per_channel").collectives);
  // Under LV08 merging would change the answer (max-min sharing splits a saturated link by
  // transfer), which is why auto does not merge there.
  CHECK(run_case(lv08, "per_pair").collectives != run_case(lv08, "per_channel").collectives);
  StreamCase alpha = lv08;
  alpha.network = "alpha_beta";
  CHECK(run_case(alpha, "auto").collectives == run_case(alpha, "per_pair").collectives);
}

TEST_CASE("streams: per_pair moves a ring's channels between each pair of GPUs as one transfer",
          "[nccl][streams]") {
  // One node of 8 GPUs, ring on 12 channels: every channel's ring visits the GPUs in one order, so
  // per channel 12 x 8 streams a call and one per GPU pair merged, in each simulated step.
  StreamCase c{"{topology: cluster, nodes: 1, gpus_per_node: 8, nvswitch: true, intra_bandwidth: 450GBps}", 8,
               "alpha_beta", ", nccl_algorithm: ring, protocol: simple, channels: 12", "100MiB", true};
  const Outcome channel = run_case(c, "per_channel");
  const Outcome pair = run_case(c, "per_pair");
  const int simulated = 2 - pair.summary.at("steps_replayed").get<int>();  // a replayed step moves nothing
  CHECK(simulated >= 1);
  CHECK(channel.trace_streams == simulated * 12 * 8);
  CHECK(pair.trace_streams == simulated * 8);
  // `auto` keeps each channel's stream when the run is traced.
  CHECK(run_case(c, "auto").trace_streams == simulated * 12 * 8);
}
