// The GPU generation is a platform fact (platform.gpu, host property aggsim_gpu) that NCCL's model
// follows, algorithm.gpu overriding it; Blackwell runs NCCL 2.30.7's constants, CDNA3 RCCL's rules.
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <regex>
#include <set>

#include "algorithms/nccl/nccl_tuning.hpp"
#include "nccl_fixture.hpp"
#include "support/refusal.hpp"

using namespace aggsim;
using namespace aggsim::test;
namespace fs = std::filesystem;

namespace {

// One node of 8 GPUs on a switch that reduces (NVLink 4 rates), its GPU generation as given.
std::string node_of(const std::string& gpu_key) {
  return "{topology: cluster, nodes: 1, gpus_per_node: 8, intra_bandwidth: 450GBps, nvswitch: true" +
         gpu_key + "}";
}

// NCCL's choices ("nvls/simple", ...) of `aggsim perf` from `min` to `max` on `platform`.
std::set<std::string> choices(const std::string& platform, const std::string& algorithm_keys = "",
                              const std::string& min = "1KiB", const std::string& max = "1GiB",
                              int ranks = 8) {
  std::set<std::string> out;
  for (const auto& row : nccl_perf_rows(platform, ranks, min, max, algorithm_keys)) {
    const std::string choice = row.at("choice");
    out.insert(choice.substr(0, choice.find(',')));
  }
  return out;
}

bool any_with(const std::set<std::string>& choices, const std::string& part) {
  for (const auto& c : choices)
    if (c.find(part) != std::string::npos) return true;
  return false;
}

}  // namespace

TEST_CASE("platform.gpu reaches NCCL's choice, and algorithm.gpu overrides it", "[nccl][gpu]") {
  // An A100's NVSwitch does not reduce: NCCL never runs NVLS there, on a Hopper node it does.
  CHECK(any_with(choices(node_of("")), "nvls"));  // none declared: hopper, as before
  CHECK(any_with(choices(node_of(", gpu: hopper")), "nvls"));
  CHECK_FALSE(any_with(choices(node_of(", gpu: ampere")), "nvls"));
  CHECK(any_with(choices(node_of(", gpu: ampere"), ", gpu: hopper"), "nvls"));
  CHECK_FALSE(any_with(choices(node_of(", gpu: hopper"), ", gpu: ampere"), "nvls"));
  CHECK(any_with(choices(node_of(", gpu: blackwell")), "nvls"));
}

TEST_CASE("the XML host property aggsim_gpu reaches NCCL's choice, and a bad value is refused at its line",
          "[nccl][gpu][errors]") {
  const std::string xml = read_file(fs::path(AGGSIM_SOURCE_DIR) / "platforms/dgx_4x8.xml");
  const std::regex node_prop(R"re(<prop id="aggsim_node" value="(\d+)"/>)re");
  const auto with = [&](const std::string& props) {
    return std::regex_replace(xml, node_prop, "$&" + props);
  };
  const auto dir = fresh_dir("gpu-xml");
  // The first node's 8 GPUs with NVLS forced: it runs on GPUs that reduce, and is refused on others.
  write_file(dir / "hopper.xml",
             with(R"(<prop id="aggsim_nvswitch" value="true"/><prop id="aggsim_gpu" value="hopper"/>)"));
  write_file(dir / "ampere.xml",
             with(R"(<prop id="aggsim_nvswitch" value="true"/><prop id="aggsim_gpu" value="ampere"/>)"));
  CHECK(choices("{file: " + (dir / "hopper.xml").string() + "}", ", nccl_algorithm: nvls", "1GiB", "1GiB",
                8) == std::set<std::string>{"nvls/simple"});
  write_file(dir / "s.yaml",
             "name: g\nranks: 8\nplatform: {file: ampere.xml}\nmodel: {size: 1MB, math: off}\n"
             "algorithm: {name: nccl_allreduce, nccl_algorithm: nvls}\n");
  const auto refused = run_aggsim({"perf", "s.yaml", "--min", "1GiB", "--max", "1GiB"}, dir);
  CHECK(refused.exit_code == 2);
  CHECK_THAT(refused.err, Catch::Contains("ampere GPUs have none, and NCCL never runs nvls there"));
  fs::remove_all(dir);
  check_refused(
      "ranks: 32\nplatform: {file: p.xml}\nmodel: {size: 1MB}\nalgorithm: {name: nccl_allreduce}\n",
      {"p.xml:14:", "aggsim_gpu: value=\"h100\" must be one of volta | ampere | hopper | blackwell | cdna3"},
      {{"p.xml", with(R"(<prop id="aggsim_gpu" value="h100"/>)")}});
}

TEST_CASE("CDNA3 follows RCCL: no NVLS, no LL128 by default, no tree with Simple on one node",
          "[nccl][gpu]") {
  const std::set<std::string> node = choices(node_of(", gpu: cdna3"));
  CHECK_FALSE(any_with(node, "nvls"));
  CHECK_FALSE(any_with(node, "ll128"));
  CHECK(node.count("tree/simple") == 0);
  const std::string two_nodes =
      "{topology: cluster, nodes: 2, gpus_per_node: 8, intra_bandwidth: 450GBps, nics_per_node: 8, "
      "bandwidth: 400Gbps, gpu: cdna3}";
  CHECK_FALSE(any_with(choices(two_nodes, "", "1KiB", "1GiB", 16), "ll128"));
  check_refused("ranks: 8\nplatform: " + node_of(", gpu: cdna3") +
                    "\nmodel: {size: 1MB}\nalgorithm: {name: nccl_allreduce, nccl_algorithm: nvls}\n",
                {"bad.yaml:", "cdna3 GPUs have none, and RCCL never runs nvls there"});
}

TEST_CASE("Blackwell: NCCL credits NVLink 5 as its logs print, and keeps LL128 up to PXN as on Hopper",
          "[nccl][gpu][tuning]") {
  // NCCL on 8 B200 prints "maxBw 721.8" for NVLink 5's 900 GB/s each way (NVIDIA/nccl#1807).
  CHECK(nccl_nvlink_GBps(GpuArch::blackwell, 900) == Approx(721.8));
  // LL128 across nodes through another GPU's NIC (PXN): NCCL keeps it from Hopper on, not on Ampere.
  const auto ll128_on = [](GpuArch arch) {
    NcclSystem s;
    s.ranks = 16;
    s.nodes = 2;
    s.arch = arch;
    s.gpu_nic_path = NicPath::pxn;
    return NcclTuning(s).enabled(NcclCollective::all_reduce, NcclAlgorithm::ring, Protocol::ll128);
  };
  CHECK(ll128_on(GpuArch::blackwell));
  CHECK(ll128_on(GpuArch::hopper));
  CHECK_FALSE(ll128_on(GpuArch::ampere));
  CHECK_FALSE(ll128_on(GpuArch::cdna3));
}

TEST_CASE("Blackwell NVLS runs at the rate NCCL's tuning gives its NVLS graph: 8 B200 and an NVL72 rack",
          "[nccl][gpu][tuning][nvls]") {
  // NCCL 2.30.7's all-reduce NVLS estimate (src/graph/tuning.cc): nChannels x bwIntra x
  // nvlsEfficiency (0.74 on Blackwell) x (nChannels - 1) / nChannels x 2, over nsteps / nRanks; the
  // model's port share times the port, over (1 + 1/GPUs) for the extra shard a GPU's port carries,
  // meets it: exactly on 8 GPUs, within 4 % on 72 (NCCL's (nChannels - 1) / nChannels and
  // nRanks / (nRanks - 1) terms, and its 32 heads' extra shard of 1/32 where the model's is 1/72).
  const auto share_of = [](int gpus) {
    const NvlsGraph g =
        nccl_nvls_graph(gpus, 1, 0, nccl_nvlink_GBps(GpuArch::blackwell, 900), 0, GpuArch::blackwell);
    return nccl_blackwell_nvls_port_share(g, 900);
  };
  const auto nccl_algbw = [](int gpus, int heads, double speed) {
    return heads * speed * 0.74 * (heads - 1.0) / heads * 2 * gpus / (2.0 * (gpus - 1));
  };
  // 8 B200: 9 x 80 fits 721.8 GB/s (sm100SpeedArrayIntra: 90, 80, ...).
  CHECK(900 * share_of(8) / (1 + 1.0 / 8) == Approx(nccl_algbw(8, 8, 80)).epsilon(1e-9));
  // 72 GPUs: 32 heads, 33 x 20 fits, 33 x 24 does not.
  CHECK(900 * share_of(72) / (1 + 1.0 / 72) == Approx(nccl_algbw(72, 32, 20)).epsilon(0.04));
  CHECK(share_of(72) == Approx(0.74 * 33 * 20 / 900));
}
