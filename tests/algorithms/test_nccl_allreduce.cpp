// nccl_allreduce: every rank ends with the exact reduction (checked in double precision), in NCCL's
// order and with NCCL's op semantics, bit for bit the same whether the pieces move at flow level or
// one message each; NCCL's choice of algorithm and protocol follows NCCL 2.21.5's cost model; bad
// combinations are refused at the key.
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "algorithms/nccl/nccl_tuning.hpp"
#include "support/cli.hpp"
#include "support/csv.hpp"
#include "support/reduction_check.hpp"
#include "support/refusal.hpp"

using namespace aggsim;
using namespace aggsim::test;

namespace {

std::string scenario(const std::string& platform, const std::string& algorithm,
                     const std::string& extra = "") {
  return fmt::format(
      "name: nccl\nseed: 3\nranks: 8\nsteps: 2\nplatform: {}\nmodel: {{size: 1000003B, proxy_dim: 997}}\n"
      "algorithm: {{name: nccl_allreduce, {}}}\n{}",
      platform, algorithm, extra);
}

const std::string kTwoNodes =
    "{topology: cluster, nodes: 2, gpus_per_node: 4, nics_per_node: 2, bandwidth: 100Gbps}";

// Every rank's vectors after each aggregation, as exact text (hex floats).
std::string vectors_after(const std::string& yaml) {
  return run_isolated([&] {
    const Scenario sc = load_scenario_text(yaml, "test.yaml");
    const Captured run = simulate_capturing(sc);
    std::ostringstream out;
    for (const auto& [step, vectors] : run.after)
      for (const auto& v : vectors) {
        for (Eigen::Index i = 0; i < v.size(); ++i) out << std::hexfloat << v[i] << ' ';
        out << '\n';
      }
    return out.str();
  });
}

// NVIDIA/nccl issue 1453's communicator: 24 ranks of H100 (3 nodes of 8 on NVSwitch), 16 coll and
// 16 NVLS channels, 20 GB/s per channel inside a node and 12 GB/s between nodes (16 x 12 = 192 GB/s
// a node: 8 NICs of 200 Gb/s), whose NVLS graph NCCL's search finds from those NICs.
NcclSystem issue1453_system() {
  NcclSystem s;
  s.ranks = 24;
  s.nodes = 3;
  s.nvls = true;
  s.nvls_channels = 16;
  s.channels = 16;
  s.bw_intra = 20;
  s.bw_inter = 12;
  const NvlsGraph g = nccl_nvls_graph(8, 3, 8, nccl_nvlink_GBps(GpuArch::hopper, 450), 25);
  s.nvls_heads = g.heads;
  s.nvls_bw_intra = g.bw_intra;
  s.nvls_bw_inter = g.bw_inter;
  return s;
}

}  // namespace

TEST_CASE("nccl_allreduce: every rank ends with the exact reduction, for ring and tree and every op",
          "[nccl][math]") {
  for (const std::string algorithm : {"ring", "tree"})
    for (const std::string op : {"avg", "sum", "min", "max", "custom_avg, denominator: 3"}) {
      INFO(algorithm << " " << op);
      const auto e = check_reduction(scenario(kTwoNodes, "nccl_algorithm: " + algorithm + ", op: " + op));
      CHECK(e.checked_vectors == 16);
      CHECK(e.max_rank_spread == 0);
      CHECK(e.max_abs_error <= summation_tolerance(8, e.reference_scale));
    }
  // NVLS inside one node, NVLS-Tree across nodes (fp32: op sum, the one NVLS reduces).
  const std::string switched =
      "{topology: cluster, nodes: 2, gpus_per_node: 4, nvswitch: true, bandwidth: 100Gbps}";
  for (const std::string algorithm : {"nvls_tree"}) {
    const auto e = check_reduction(scenario(switched, "nccl_algorithm: " + algorithm + ", op: sum"));
    CHECK(e.max_rank_spread == 0);
    CHECK(e.max_abs_error <= summation_tolerance(8, e.reference_scale));
  }
  const auto e = check_reduction(
      "name: nvls\nranks: 4\nsteps: 1\nplatform: {topology: cluster, nodes: 1, gpus_per_node: 4, nvswitch: "
      "true}\n"
      "model: {size: 1MB, proxy_dim: 501}\nalgorithm: {name: nccl_allreduce, nccl_algorithm: nvls, op: sum}\n");
  CHECK(e.max_rank_spread == 0);
  CHECK(e.max_abs_error <= summation_tolerance(4, e.reference_scale));
}

TEST_CASE("nccl_allreduce: flow-level and chunk-level movement leave bit-identical vectors", "[nccl][math]") {
  for (const std::string algorithm : {"ring", "tree"})
    for (const std::string protocol : {"ll", "simple"}) {
      INFO(algorithm << " " << protocol);
      const std::string alg = "nccl_algorithm: " + algorithm + ", protocol: " + protocol + ", channels: 3";
      const std::string flow = vectors_after(scenario(kTwoNodes, alg));
      const std::string chunk = vectors_after(scenario(kTwoNodes, alg + ", movement: chunk"));
      REQUIRE(flow.find("EXCEPTION") == std::string::npos);
      CHECK(flow.size() > 1000);
      CHECK(flow == chunk);
    }
}

TEST_CASE("NCCL's cost model gives the estimate NCCL printed for an NVLS-Tree call", "[nccl][tuning]") {
  // NVIDIA/nccl issue 1453: 24 ranks of H100 (3 nodes of 8 on NVSwitch), NCCL 2.19-2.22 prints
  // "524288 Bytes -> Algo 5 proto 2 time 59.553600" (algorithm 5 NVLS_TREE, protocol 2 Simple).
  // Latency: NVLS-Tree's NVLink hop (25 us) + 2 log2(3 nodes) network hops (14 us); bandwidth: 8
  // heads (one per NIC) at half of the NVLS graph's 24 GB/s between nodes (more than 2 nodes), times
  // 5/6: 80 GB/s.
  const NcclTuning tuning(issue1453_system());
  CHECK(tuning.time_us(NcclCollective::all_reduce, NcclAlgorithm::nvls_tree, Protocol::simple, 524288) ==
        Approx(59.553600).epsilon(1e-6));
  CHECK(tuning.cost(NcclCollective::all_reduce, NcclAlgorithm::nvls_tree, Protocol::simple).latency_us ==
        Approx(53));
}

TEST_CASE(
    "NCCL's choice: tree for small calls across nodes, ring for large ones, fewer channels for small calls",
    "[nccl][tuning]") {
  // 8 nodes of 8 Hopper GPUs on NVLink (300 GB/s), one 400 Gb/s NIC per GPU, 16 channels.
  NcclSystem s;
  s.ranks = 64;
  s.nodes = 8;
  s.channels = 16;
  s.bw_intra = 300.0 / 16;
  s.bw_inter = 8 * 50.0 / 16;
  const NcclTuning tuning(s);
  const auto small = tuning.choose(NcclCollective::all_reduce, 1 << 20);
  const auto large = tuning.choose(NcclCollective::all_reduce, 8.0 * (1 << 30));
  CHECK(small.algorithm == NcclAlgorithm::tree);
  CHECK(large.algorithm == NcclAlgorithm::ring);
  CHECK(large.protocol == Protocol::simple);
  CHECK(large.channels == 16);
  // getChannnelThreadInfo: a 4 KiB tree LL call stays above 8 bytes per thread on one channel only.
  CHECK(tuning.call_channels(NcclAlgorithm::tree, Protocol::ll, 4096) == 1);
  // The choice is the fastest of NCCL's own estimates.
  for (double bytes : {8.0, 65536.0, 1048576.0, 67108864.0, 1073741824.0}) {
    const auto c = tuning.choose(NcclCollective::all_reduce, bytes);
    for (NcclAlgorithm a : kNcclAlgorithms)
      for (Protocol p : kProtocols) {
        const double t = tuning.time_us(NcclCollective::all_reduce, a, p, bytes);
        if (t >= 0) CHECK(c.predicted_us <= t);
      }
  }
}

TEST_CASE("nccl_allreduce records its choice per call and counts them in summary.json", "[nccl]") {
  const auto dir = fresh_dir("nccl-summary");
  write_file(dir / "s.yaml", scenario(kTwoNodes, "protocol: ll128", "network: alpha_beta\n"));
  const auto r = run_aggsim({"run", "s.yaml", "--out", "out"}, dir);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto summary = nlohmann::json::parse(read_file(dir / "out" / "summary.json"));
  int calls = 0;
  for (const auto& [key, value] : summary.items())
    if (key.rfind("nccl_calls_", 0) == 0) {
      CHECK(key.size() > 16);
      CHECK(key.substr(key.size() - 6) == "_ll128");
      calls += value.get<int>();
    }
  CHECK(calls == 2);                                // one call per step
  CHECK(summary["nccl_channels"].get<int>() == 4);  // two per NIC, two NICs
  std::filesystem::remove_all(dir);
}

TEST_CASE("min_channels and max_channels bound the communicator's channels as NCCL_MIN/MAX_NCHANNELS do",
          "[nccl]") {
  const auto dir = fresh_dir("nccl-channel-bounds");
  // Channels and the time of one 64 MiB all-reduce step on two nodes of two 100 Gb/s NICs each.
  const auto run = [&](const std::string& bounds) {
    write_file(dir / "s.yaml", fmt::format("name: b\nranks: 8\nsteps: 1\nplatform: {}\nmodel: {{size: 64MiB, "
                                           "math: off}}\nalgorithm: {{name: nccl_allreduce{}}}\n",
                                           kTwoNodes, bounds));
    const auto r = run_aggsim({"run", "s.yaml", "--out", "out", "--force"}, dir);
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    const auto summary = nlohmann::json::parse(read_file(dir / "out" / "summary.json"));
    return std::make_pair(summary["nccl_channels"].get<int>(), summary["collective_time_s"].get<double>());
  };
  const auto [own, own_time] = run("");
  CHECK(own == 4);  // two per NIC
  CHECK(run(", min_channels: 6").first == 6);
  CHECK(run(", min_channels: 2").first == 4);  // a lower bound below NCCL's own count changes nothing
  CHECK(run(", comm_channels: 3, min_channels: 6").first == 6);
  const auto [one, one_time] = run(", max_channels: 1");
  CHECK(one == 1);
  // One channel leaves through one of a node's two NICs: the step takes about twice as long.
  CHECK(one_time > 1.7 * own_time);
  std::filesystem::remove_all(dir);
  check_refused(
      "ranks: 8\nplatform: " + kTwoNodes +
          "\nmodel: {size: 1MB}\nalgorithm: {name: nccl_allreduce, min_channels: 8, max_channels: 4}\n",
      {"bad.yaml:4:", "algorithm.min_channels: 8 is more than max_channels (4)"});
  check_refused("ranks: 8\nplatform: " + kTwoNodes +
                    "\nmodel: {size: 1MB}\nalgorithm: {name: nccl_allreduce, "
                    "max_channels: 0}\n",
                {"algorithm.max_channels: '0' is neither auto nor a whole number of channels from 1"});
}

TEST_CASE("nccl_allreduce refuses what NCCL would not run, naming the key", "[nccl][errors]") {
  const std::string head = "ranks: 8\nplatform: " + kTwoNodes + "\nmodel: {size: 1MB}\n";
  check_refused(head + "algorithm: {name: nccl_allreduce, nccl_algorithm: nvls, protocol: ll}\n",
                {"bad.yaml:4:", "algorithm.protocol: ll: NCCL runs nvls with the simple protocol only"});
  check_refused(head + "algorithm: {name: nccl_allreduce, nccl_algorithm: nvls_tree}\n",
                {"algorithm.nccl_algorithm: nvls_tree needs nodes of several GPUs on a switch that reduces"});
  check_refused(head + "algorithm: {name: nccl_allreduce, channels: 64}\n",
                {"algorithm.channels: 64 is more than the 32 channels NCCL 2.21.5 opens"});
  check_refused(head + "algorithm: {name: nccl_allreduce, channels: many}\n",
                {"algorithm.channels: 'many' is neither auto nor a whole number"});
  check_refused(head + "algorithm: {name: nccl_allreduce, protocol: ll256}\n",
                {"bad.yaml:4:", "protocol", "ll128"});
  // NCCL_PROTO and NCCL_ALGO spellings get a hint at aggsim's.
  check_refused(head + "algorithm: {name: nccl_allreduce, protocol: LL128}\n",
                {"algorithm.protocol: must be one of", "(did you mean 'll128'?)"});
  check_refused(head + "algorithm: {name: nccl_allreduce, nccl_algorithm: Rnig}\n",
                {"algorithm.nccl_algorithm", "(did you mean 'ring'?)"});
  check_refused(head + "algorithm: {name: nccl_allreduce, protocol: Simple}\n", {"(did you mean 'simple'?)"});
  check_refused(head + "algorithm: {name: nccl_allreduce, collective: all_gather}\n",
                {"algorithm.collective: all_gather moves bytes only", "model.math: off"});
  // The chunk-level reference moves all-reduce, reduce-scatter and all-gather: it would time a
  // broadcast as one of them.
  check_refused("ranks: 8\nplatform: " + kTwoNodes +
                    "\nmodel: {size: 1MB, math: off}\nalgorithm: {name: nccl_allreduce, collective: "
                    "broadcast, movement: chunk}\n",
                {"bad.yaml:4:", "algorithm.movement: chunk: the piece-by-piece reference runs all_reduce, "
                                "reduce_scatter and all_gather; broadcast moves at flow level only"});
  check_refused(
      "ranks: 8\nplatform: {topology: cluster, nodes: 1, gpus_per_node: 8, nvswitch: true}\n"
      "model: {size: 1MB}\nalgorithm: {name: nccl_allreduce, nccl_algorithm: nvls_tree}\n",
      {"nvls_tree joins nodes, and these ranks are on one node: use nvls"});
}

TEST_CASE("NCCL's cost model gives the estimates and choices NCCL printed on 3 nodes of H100",
          "[nccl][tuning]") {
  // NVIDIA/nccl issue 1453 (tests/data/nccl_info/): NCCL 2.20 - 2.22 prints, per call, the
  // algorithm and protocol it chose and its own estimate: "N Bytes -> Algo A proto P time T". The
  // communicator: 24 ranks (3 nodes of 8 H100 on NVSwitch), 16 coll and 16 NVLS channels, 12 GB/s
  // per channel between nodes (its ring reaches 16 x 12 GB/s, the 8 GiB line's bandwidth).
  const NcclTuning tuning(issue1453_system());
  std::ifstream log(std::string(AGGSIM_SOURCE_DIR) +
                    "/tests/data/nccl_info/issue1453_h100_numeric_tuning_excerpts.log");
  REQUIRE(log);
  int lines = 0;
  for (std::string line; std::getline(log, line);) {
    const auto at = line.find("NCCL INFO ");
    double bytes = 0, printed = 0;
    int algo = -1, proto = -1;
    if (at == std::string::npos ||
        std::sscanf(line.c_str() + at + 10, "%lf Bytes -> Algo %d proto %d time %lf", &bytes, &algo, &proto,
                    &printed) != 4)
      continue;
    ++lines;
    // NCCL's enum: 0 tree, 1 ring, 5 NVLS-Tree; protocols 0 LL, 1 LL128, 2 Simple.
    const NcclAlgorithm a = algo == 0   ? NcclAlgorithm::tree
                            : algo == 1 ? NcclAlgorithm::ring
                                        : NcclAlgorithm::nvls_tree;
    const Protocol p = static_cast<Protocol>(proto);
    INFO(line);
    CHECK(tuning.time_us(NcclCollective::all_reduce, a, p, bytes) == Approx(printed).epsilon(1e-5));
    const NcclChoice c = tuning.choose(NcclCollective::all_reduce, bytes);
    CHECK(c.algorithm == a);
    CHECK(c.protocol == p);
  }
  CHECK(lines > 40);
  // The NVLS-Tree call of the same thread ("524288 Bytes -> Algo 5 proto 2 time 59.553600").
  const NcclChoice c = tuning.choose(NcclCollective::all_reduce, 524288);
  CHECK(c.algorithm == NcclAlgorithm::nvls_tree);
  CHECK(c.predicted_us == Approx(59.5536).epsilon(1e-6));
}

TEST_CASE("NCCL keeps LL128 inside nodes when a GPU reaches its NIC through the CPU", "[nccl][tuning]") {
  // NCCL's rule (src/graph/tuning.cc): LL128 is on by default only when the graph's GPU-NIC path is
  // at most PXB (PCIe switches), or at most PXN (through another GPU) on Hopper; one node has no NIC
  // path. 8 nodes of 4 GPUs, 2 NICs each.
  auto ll128_on = [](int nodes, GpuArch arch, NicPath path) {
    NcclSystem s;
    s.ranks = 4 * nodes;
    s.nodes = nodes;
    s.arch = arch;
    s.channels = 4;
    s.bw_intra = 25;
    s.bw_inter = 12.5;
    s.gpu_nic_path = path;
    const NcclTuning t(s);
    return t.enabled(NcclCollective::all_reduce, NcclAlgorithm::ring, Protocol::ll128) &&
           t.enabled(NcclCollective::all_reduce, NcclAlgorithm::tree, Protocol::ll128);
  };
  for (GpuArch arch : {GpuArch::ampere, GpuArch::hopper}) {
    CHECK(ll128_on(8, arch, NicPath::pix));
    CHECK(ll128_on(8, arch, NicPath::pxb));
    CHECK_FALSE(ll128_on(8, arch, NicPath::phb));
    CHECK_FALSE(ll128_on(8, arch, NicPath::sys));
    CHECK(ll128_on(1, arch, NicPath::sys));
  }
  CHECK_FALSE(ll128_on(8, GpuArch::ampere, NicPath::pxn));
  CHECK(ll128_on(8, GpuArch::hopper, NicPath::pxn));
}

TEST_CASE("platform.gpu_nic_path and the XML host property reach NCCL's choice, and bad values are refused",
          "[nccl][tuning][errors]") {
  // 4 nodes of 8 A100 (platforms/dgx_4x8.xml, and the generator it equals): at 1 MiB NCCL runs tree
  // with LL128 when the NICs sit on the GPUs' PCIe switches, ring with LL once LL128 is off.
  const std::string xml = read_file(std::filesystem::path(AGGSIM_SOURCE_DIR) / "platforms/dgx_4x8.xml");
  const std::regex node_prop(R"re(<prop id="aggsim_node" value="(\d+)"/>)re");
  auto with_path = [&](const std::string& path, bool every_host) {
    std::string out = std::regex_replace(
        xml, node_prop, "$&<prop id=\"aggsim_gpu_nic_path\" value=\"" + path + "\"/>",
        every_host ? std::regex_constants::format_default : std::regex_constants::format_first_only);
    return out;
  };
  auto choice_at_1MiB = [](const std::string& platform, const std::map<std::string, std::string>& files) {
    const auto dir = fresh_dir("nic-path");
    for (const auto& [name, text] : files) write_file(dir / name, text);
    write_file(dir / "s.yaml",
               "name: p\nranks: 32\nsteps: 1\nplatform: " + platform +
                   "\nmodel: {size: 1MB, math: off}\nalgorithm: {name: nccl_allreduce, gpu: ampere}\n");
    const auto r = run_aggsim({"perf", "s.yaml", "--min", "1MiB", "--max", "1MiB", "--csv", "p.csv"}, dir);
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    const std::string csv = read_file(dir / "p.csv");
    std::filesystem::remove_all(dir);
    const auto row = csv.substr(csv.find('\n') + 1);
    return row.substr(row.find('/') - 4, 12);
  };
  const std::string generated =
      "{topology: cluster, nodes: 4, gpus_per_node: 8, intra_bandwidth: 300GBps, bandwidth: 200GBps";
  CHECK_THAT(choice_at_1MiB(generated + "}", {}), Catch::Contains("tree/ll128"));
  CHECK_THAT(choice_at_1MiB(generated + ", gpu_nic_path: pxb}", {}), Catch::Contains("tree/ll128"));
  CHECK_THAT(choice_at_1MiB(generated + ", gpu_nic_path: phb}", {}), Catch::Contains("ring/ll,"));
  CHECK_THAT(choice_at_1MiB("{file: p.xml}", {{"p.xml", xml}}), Catch::Contains("tree/ll128"));
  CHECK_THAT(choice_at_1MiB("{file: p.xml}", {{"p.xml", with_path("phb", true)}}),
             Catch::Contains("ring/ll,"));
  // The communicator's farthest path counts, as NCCL's graph takes the worst of its GPUs.
  CHECK_THAT(choice_at_1MiB("{file: p.xml}", {{"p.xml", with_path("sys", false)}}),
             Catch::Contains("ring/ll,"));

  // Forced (NCCL_PROTO=LL128), NCCL runs LL128 where it would not choose it, and so does the model.
  {
    const auto dir = fresh_dir("nic-path-forced");
    for (const std::string& extra :
         {std::string(", gpu_nic_path: phb}"), std::string(", intra_link: pcie}")}) {
      write_file(dir / "s.yaml",
                 "name: p\nranks: 32\nsteps: 1\nplatform: " + generated + extra +
                     "\nmodel: {size: 1MB, math: off}\nalgorithm: {name: nccl_allreduce, gpu: "
                     "ampere, protocol: ll128}\n");
      const auto r = run_aggsim({"run", "s.yaml", "--out", "out", "--force"}, dir);
      INFO(extra << ": " << r.err);
      REQUIRE(r.exit_code == 0);
      CHECK_THAT(read_file(dir / "out/collectives.csv"), Catch::Contains(",ll128,"));
    }
    std::filesystem::remove_all(dir);
  }

  const std::string tail = "\nmodel: {size: 1MB}\nalgorithm: {name: nccl_allreduce}\n";
  check_refused(
      "ranks: 8\nplatform: {topology: cluster, nodes: 2, gpus_per_node: 4, gpu_nic_path: PHB}" + tail,
      {"bad.yaml:2:", "platform.gpu_nic_path: must be one of pix | pxb | pxn | phb | sys",
       "did you mean 'phb'"});
  check_refused(
      "ranks: 32\nplatform: {file: p.xml}" + tail,
      {"p.xml:14:", "<prop>: aggsim_gpu_nic_path: value=\"PCIe\" must be one of pix | pxb | pxn | phb | sys"},
      {{"p.xml", with_path("PCIe", true)}});
}

TEST_CASE("NCCL's choice on two nodes: its tree where the tree graph's intra speed lifts it above the ring",
          "[nccl][tuning]") {
  // NCCL's search lets a tree graph's bwIntra rise to twice its bwInter (on two nodes a tree's bytes
  // cross the network once each way, a ring's twice), and its tuning caps each graph channel (half
  // the communicator's). The published logs show the outcome on two nodes:
  // - CSCS Alps, 4 GH200 and four 200 Gb/s NICs per node: 158 GB/s bus bandwidth at 4 GiB, above
  //   the 100 GB/s of the four NICs that bound any ring, so NCCL ran its tree;
  // - ALCF Polaris, 4 A100 and two 200 Gb/s NICs: 36.8 GB/s at 1 GiB on two nodes as on eight
  //   (36.5), where NCCL runs its ring; a tree would carry more than the NICs allow a ring.
  namespace fs = std::filesystem;
  const fs::path scenarios = fs::path(AGGSIM_SOURCE_DIR) / "tests" / "data" / "calibration" / "nccl";
  auto choice_at_1GiB = [&](const std::string& scenario) {
    const auto dir = fresh_dir("two-node-choice");
    const auto r = run_aggsim(
        {"perf", (scenarios / scenario).string(), "--min", "1GiB", "--max", "1GiB", "--csv", "p.csv"}, dir);
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    const auto rows = read_csv_rows(read_file(dir / "p.csv"));
    fs::remove_all(dir);
    REQUIRE(rows.size() == 1);
    return rows[0].at("choice");
  };
  CHECK(choice_at_1GiB("alps_gh200.yaml") == "tree/simple");
  CHECK(choice_at_1GiB("polaris_a100.yaml") == "ring/simple");
}
