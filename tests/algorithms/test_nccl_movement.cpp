// nccl_allreduce's flow-level movement (each channel edge one stream, plus the pipeline's
// dependency chain) against the chunk-level reference (every piece a message, NCCL's slots per
// connection, a hop latency per piece): the step times differ by less than kBound on every case,
// across platforms, sizes (uneven ones included), algorithms and protocols
// (algorithms/nccl/FLOW_VS_CHUNK.md).
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <iterator>
#include <random>
#include <sstream>

#include "support/reduction_check.hpp"

using namespace aggsim;
using namespace aggsim::test;

namespace {

constexpr double kBound = 0.05;

struct Case {
  std::string platform;
  int ranks;
  std::string size;
  std::string algorithm;  // nccl_algorithm, protocol, channels
};

double step_time(const Case& c, const std::string& movement) {
  const std::string yaml = fmt::format(
      "name: movement\nranks: {}\nsteps: 1\nplatform: {}\nmodel: {{size: {}, math: off}}\n"
      "algorithm: {{name: nccl_allreduce, {}, movement: {}}}\n",
      c.ranks, c.platform, c.size, c.algorithm, movement);
  return step_times(yaml).at(0);
}

void check_cases(const std::vector<Case>& cases) {
  for (const Case& c : cases) {
    const double flow = step_time(c, "flow"), chunk = step_time(c, "chunk");
    INFO(c.platform << " " << c.ranks << " ranks, " << c.size << ", " << c.algorithm << ": flow " << flow
                    << " s, chunk " << chunk << " s");
    CHECK(std::abs(flow - chunk) <= kBound * chunk);
  }
}

// Two HGX H100 nodes (the h100_ib400 calibration scenario's platform).
const std::string kH100Pair =
    "{topology: cluster, nodes: 2, gpus_per_node: 8, intra_bandwidth: 450GBps, intra_latency: 0.5us, nvswitch: "
    "true, nics_per_node: 8, nic_bandwidth: 400Gbps, bandwidth: 400Gbps, latency: 1us, fabric: infiniband}";

const std::string kCluster = "{topology: cluster, nodes: 8, bandwidth: 100Gbps, latency: 1us}";
const std::string kRails =
    "{topology: cluster, nodes: 2, gpus_per_node: 4, nics_per_node: 4, nic_bandwidth: 100Gbps, bandwidth: "
    "100Gbps}";

}  // namespace

TEST_CASE("flow and chunk movement agree on a cluster of single-GPU nodes", "[nccl][movement]") {
  std::vector<Case> cases;
  for (const std::string size : {"64KiB", "4MiB", "64MiB"})
    for (const std::string protocol : {"ll", "ll128", "simple"})
      cases.push_back({kCluster, 8, size, "nccl_algorithm: ring, protocol: " + protocol});
  for (const std::string size : {"64KiB", "16MiB"})
    cases.push_back({kCluster, 8, size, "nccl_algorithm: tree, protocol: simple"});
  check_cases(cases);
}

TEST_CASE("flow and chunk movement agree on multi-GPU nodes with a NIC per GPU", "[nccl][movement]") {
  std::vector<Case> cases;
  for (const std::string size : {"256KiB", "32MiB"})
    for (const std::string algorithm : {"ring", "tree"})
      for (const std::string protocol : {"ll128", "simple"})
        cases.push_back({kRails, 8, size, "nccl_algorithm: " + algorithm + ", protocol: " + protocol});
  check_cases(cases);
}

TEST_CASE("flow and chunk movement agree on a fat tree, a torus, an uneven size and one slow NIC",
          "[nccl][movement]") {
  check_cases({
      {"{topology: fat_tree, nodes: 8, gpus_per_node: 2, bandwidth: 50Gbps}", 16, "16MiB",
       "nccl_algorithm: ring, protocol: simple"},
      {"{topology: fat_tree, nodes: 8, gpus_per_node: 2, bandwidth: 50Gbps}", 16, "16MiB",
       "nccl_algorithm: tree, protocol: simple"},
      {"{topology: torus, nodes: 8, bandwidth: 50Gbps}", 8, "8MiB", "nccl_algorithm: ring, protocol: simple"},
      {kCluster, 8, "10000019B", "nccl_algorithm: ring, protocol: simple, channels: 3"},
      {"{topology: cluster, nodes: 4, gpus_per_node: 2, bandwidth: 100Gbps, overrides: [{nodes: 2, "
       "nic_bandwidth: "
       "10Gbps}]}",
       8, "16MiB", "nccl_algorithm: ring, protocol: simple"},
  });
}

// Ring LL128 on two 8-GPU nodes with 6 to 16 channels, at the sizes where its flow level ran up to 15 %
// fast before a Hopper channel's network rate bounded it, and 16 channels at 16 MiB, 12.4 % fast by
// the flow model: a one-loop LL128 ring of 12 channels or more moves piece by piece at flow level
// (tests/bench/nccl_movement.py ll128_2x8 sweeps 4-16 channels, algorithms/nccl/FLOW_MISSES.md).
TEST_CASE("flow and chunk movement agree on an LL128 ring over two 8-GPU nodes with many channels",
          "[nccl][movement]") {
  std::vector<Case> cases;
  for (const std::string channels : {"6", "8", "12"})
    for (const std::string size : {"4MiB", "8MiB"})
      cases.push_back(
          {kH100Pair, 16, size, "gpu: hopper, nccl_algorithm: ring, protocol: ll128, channels: " + channels});
  cases.push_back({kH100Pair, 16, "16MiB", "gpu: hopper, nccl_algorithm: ring, protocol: ll128, channels: 16"});
  check_cases(cases);
}

namespace {

// One run's step time, messages and a hash of every rank's result vector (math on: all-reduce).
struct Outcome {
  double time = 0;
  std::uint64_t messages = 0, result_hash = 0;
};

Outcome outcome_of(const std::string& yaml) {
  const std::string text = run_isolated([&] {
    const Scenario sc = load_scenario_text(yaml, "test.yaml");
    const Captured run = simulate_capturing(sc);
    std::uint64_t hash = 0xcbf29ce484222325ULL;
    for (const auto& [step, outs] : run.after)
      for (const Eigen::VectorXf& v : outs)
        for (Eigen::Index i = 0; i < v.size(); ++i) {
          std::uint32_t bits = 0;
          std::memcpy(&bits, &v[i], sizeof bits);
          hash = (hash ^ bits) * 0x100000001b3ULL;
        }
    return fmt::format("{} {} {}", summarize_steps(run.result.log).at(0).step_time_s, run.result.messages_sent,
                       hash);
  });
  std::istringstream in(text);
  Outcome o;
  if (!(in >> o.time >> o.messages >> o.result_hash)) throw std::runtime_error("no outcome: " + text);
  return o;
}

// A generated case: a random small platform, an algorithm x protocol (x collective for PAT), a size.
struct Drawn {
  std::string platform, size, algorithm;
  int ranks = 0;
  bool math = false;
};

// The GPU generations (platform.gpu) a case runs on, in turn: Hopper is what a platform declaring none
// runs (a channel moves 20 GB/s over the network), Ampere has no such rate, Blackwell other channel counts.
const char* const kGpus[] = {"ampere", "hopper", "blackwell"};

Drawn draw(std::mt19937& rng, const std::string& algorithm, const std::string& protocol, bool pat_gather,
           const std::string& gpu) {
  auto pick = [&rng](int lo, int hi) { return lo + static_cast<int>(rng() % static_cast<unsigned>(hi - lo + 1)); };
  const char* topologies[] = {"cluster", "fat_tree", "torus", "dragonfly"};
  const char* bandwidths[] = {"25Gbps", "100Gbps", "400Gbps"};
  const bool pat = algorithm == "pat";
  const int nodes = pick(2, pat ? 12 : 8), gpus = pat ? 1 : pick(1, 4);
  const int nics = gpus > 1 ? pick(1, 2) : 1;
  std::string platform = fmt::format("{{topology: {}, nodes: {}, bandwidth: {}, latency: {}us",
                                     topologies[pick(0, 3)], nodes, bandwidths[pick(0, 2)], pick(1, 5));
  if (gpus > 1) platform += fmt::format(", gpus_per_node: {}, intra_bandwidth: 300GBps, nics_per_node: {}", gpus, nics);
  if (pick(0, 2) == 0)  // a node whose link into the fabric is 4x slower
    platform += fmt::format(", overrides: [{{nodes: {}, bandwidth: 10Gbps}}]", pick(0, nodes - 1));
  platform += ", gpu: " + gpu + "}";
  // 8 B - 16 MiB, log-uniform, whole floats.
  const double bytes = std::pow(2.0, 3 + 21 * static_cast<double>(rng() % 100000) / 100000.0);
  std::string settings = fmt::format("nccl_algorithm: {}, protocol: {}", algorithm, protocol);
  if (pat) settings += fmt::format(", op: sum, collective: {}", pat_gather ? "all_gather" : "reduce_scatter");
  return {platform, fmt::format("{}B", std::max<std::int64_t>(4, static_cast<std::int64_t>(bytes) / 4 * 4)), settings,
          nodes * gpus, !pat};
}

// Flow against chunk on `count` seeded cases of each protocol: within `bound`, and the same vectors.
void check_generated(std::uint32_t seed, const std::string& algorithm, int count, double bound) {
  std::mt19937 rng(seed);
  const bool pat = algorithm == "pat";
  const std::vector<std::string> protocols = pat ? std::vector<std::string>{"simple"}
                                                 : std::vector<std::string>{"ll", "ll128", "simple"};
  for (int i = 0; i < count; ++i) {
    const auto index = static_cast<std::size_t>(i);
    const std::string& protocol = protocols[index % protocols.size()];
    // GPUs in turn, shifted by one once every protocol has run: each (protocol, GPU) pair within 9 cases.
    const std::string gpu = kGpus[(index + index / protocols.size()) % std::size(kGpus)];
    const Drawn d = draw(rng, algorithm, protocol, i % 2 == 1, gpu);
    auto yaml = [&d](const std::string& movement) {
      return fmt::format(
          "name: movement\nranks: {}\nsteps: 1\nplatform: {}\nmodel: {}\n"
          "algorithm: {{name: nccl_allreduce, {}, movement: {}}}\n",
          d.ranks, d.platform,
          d.math ? fmt::format("{{size: {}, math: on, proxy_dim: 257}}", d.size) : fmt::format("{{size: {}, math: off}}", d.size),
          d.algorithm, movement);
    };
    const Outcome flow = outcome_of(yaml("flow")), chunk = outcome_of(yaml("chunk"));
    INFO("case " << i << ": " << d.platform << " " << d.ranks << " ranks, " << d.size << ", " << d.algorithm
                 << ": flow " << flow.time << " s, chunk " << chunk.time << " s");
    CHECK(std::abs(flow.time - chunk.time) <= bound * chunk.time);
    CHECK(flow.result_hash == chunk.result_hash);
  }
}

}  // namespace

// The generated comparison (tests/bench/nccl_movement.py generated runs 300 such cases): random small
// platforms (four topologies, 1-4 GPUs and 1-2 NICs a node, a slow node link in a third of them), sizes
// 8 B - 16 MiB, every protocol on Ampere, Hopper and Blackwell (each pair twice for ring and tree);
// 18 cases each of ring and tree, 12 of PAT (reduce-scatter and all-gather). Every algorithm holds
// 5 %: trees of few pieces a channel (up to 50) and PAT of few loops (up to 4), where the flow model
// missed by up to 18.4 % and 14 %, move piece by piece at flow level. NVLS and NVLS-Tree move at flow
// level only (tests/algorithms/test_nccl_nvls.cpp holds them to published runs).
TEST_CASE("flow and chunk movement agree on generated ring cases", "[nccl][movement][generated]") {
  check_generated(47, "ring", 18, kBound);
}
TEST_CASE("flow and chunk movement agree on generated tree cases", "[nccl][movement][generated]") {
  check_generated(48, "tree", 18, kBound);
}
TEST_CASE("flow and chunk movement agree on generated PAT cases", "[nccl][movement][generated]") {
  check_generated(49, "pat", 12, kBound);
}

// A tree call of few pieces a channel moves piece by piece at flow level: as many messages as at chunk
// level (2 channels x 2 directions x 7 edges x its pieces, at most the algorithm's threshold of 50),
// the same time; a call of many pieces sends one stream per channel edge.
TEST_CASE("a flow-level tree call of few pieces a channel sends its pieces, bounded", "[nccl][movement]") {
  auto yaml = [](const std::string& size, const std::string& movement) {
    return fmt::format(
        "name: movement\nranks: 8\nsteps: 1\nplatform: {}\nmodel: {{size: {}, math: off}}\n"
        "algorithm: {{name: nccl_allreduce, nccl_algorithm: tree, protocol: simple, channels: 2, movement: {}}}\n",
        kCluster, size, movement);
  };
  const int edges = 2 * 2 * 7;
  // 4 MiB: a few pieces a channel (NCCL's tree chunk is 512 KiB or less).
  const Outcome few = outcome_of(yaml("4MiB", "flow")), few_chunk = outcome_of(yaml("4MiB", "chunk"));
  CHECK(few.messages == few_chunk.messages);
  CHECK(few.messages >= static_cast<std::uint64_t>(edges) * 4);
  CHECK(few.messages <= static_cast<std::uint64_t>(edges) * 50);
  CHECK(few.time == Approx(few_chunk.time).epsilon(1e-6));
  // 128 MiB: 128 pieces a channel, above the threshold: one stream per channel edge.
  const Outcome many = outcome_of(yaml("128MiB", "flow"));
  CHECK(many.messages == static_cast<std::uint64_t>(edges));
  // few_pieces: flow times the few-piece call by the flow model (streams), further from the chunk level.
  const Outcome streamed = outcome_of(yaml("4MiB", "flow, few_pieces: flow"));
  CHECK(streamed.messages == static_cast<std::uint64_t>(edges));
  CHECK(streamed.time != few_chunk.time);
}
