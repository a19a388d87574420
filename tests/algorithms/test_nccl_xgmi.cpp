// RCCL over an xGMI mesh (`intra_link: xgmi`, `gpu: cdna3`): the rings spread over every link of
// the mesh (arc-disjoint Hamiltonian cycles), a ring all-reduce's time against the closed form of a
// mesh whose links each carry one ring, and RCCL 2.21.5's tree/ring choice with its reasons
// (ROCm/rccl src/graph/tuning.cc, tuning model 5 of the MI300X node).
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <map>
#include <set>

#include "algorithms/nccl/mesh_rings.hpp"
#include "algorithms/nccl/nccl_tuning.hpp"
#include "nccl_fixture.hpp"

using namespace aggsim;
using namespace aggsim::test;
namespace fs = std::filesystem;

namespace {

// Every ring visits each GPU once, and no directed link is used twice.
void check_arc_disjoint_cycles(int g, std::size_t expected_rings) {
  INFO(g << " GPUs");
  const auto rings = mesh_rings(g);
  CHECK(rings.size() == expected_rings);
  std::set<std::pair<int, int>> arcs;
  for (const auto& ring : rings) {
    REQUIRE(ring.size() == static_cast<std::size_t>(g));
    CHECK(std::set<int>(ring.begin(), ring.end()).size() == static_cast<std::size_t>(g));
    for (int k = 0; k < g; ++k) {
      const std::pair<int, int> arc{ring[static_cast<std::size_t>(k)],
                                    ring[static_cast<std::size_t>((k + 1) % g)]};
      CHECK(arc.first != arc.second);
      CHECK(arcs.insert(arc).second);
    }
  }
  CHECK(mesh_rings(g) == rings);  // the same node size, the same rings
}

struct PerfRow {
  double bytes = 0, seconds = 0;
  std::string choice;
};

// `aggsim perf` of nccl_allreduce on `platform` with `ranks`, from `min` to `max`.
std::vector<PerfRow> perf(const std::string& platform, int ranks, const std::string& min,
                          const std::string& max, const std::string& algorithm_keys = "") {
  std::vector<PerfRow> rows;
  for (const auto& row : nccl_perf_rows(platform, ranks, min, max, algorithm_keys))
    rows.push_back({std::stod(row.at("bytes")), std::stod(row.at("time_s")), row.at("choice")});
  return rows;
}

NcclSystem rccl_system(int nodes) {
  NcclSystem s;
  s.ranks = 8 * nodes;
  s.nodes = nodes;
  s.arch = GpuArch::cdna3;
  s.channels = nodes == 1 ? 28 : 16;
  s.bw_intra = 7 * 48.0 / s.channels;
  s.bw_inter = (nodes == 1 ? 7 * 48.0 : 8 * 50.0) / s.channels;
  return s;
}

std::string choice_at(const NcclTuning& t, double bytes) {
  const NcclChoice c = t.choose(NcclCollective::all_reduce, bytes);
  return fmt::format("{}/{}", nccl_algorithm_name(c.algorithm), protocol_name(c.protocol));
}

}  // namespace

TEST_CASE("xgmi: the mesh rings are arc-disjoint Hamiltonian cycles over every link", "[nccl][xgmi]") {
  // K_g with both directions splits into g - 1 directed Hamiltonian cycles except for g = 4 and 6
  // (Tillson 1980), where at most g - 2 fit.
  check_arc_disjoint_cycles(2, 1);
  check_arc_disjoint_cycles(3, 2);
  check_arc_disjoint_cycles(4, 2);
  check_arc_disjoint_cycles(5, 4);
  check_arc_disjoint_cycles(8, 7);  // an MI300X node: all 56 directed links, each once
  check_arc_disjoint_cycles(16, 15);
  // Across nodes channel c leaves the node from the GPU before its cut and enters at the one after:
  // the first c channels use every GPU (so every NIC) at most ceil(c / 8) times each way.
  for (int channels : {7, 14, 21, 28}) {
    INFO(channels << " channels");
    const auto& cuts = mesh_ring_cuts(8, channels);
    REQUIRE(cuts.size() == static_cast<std::size_t>(channels));
    std::map<int, int> leaving, entering;
    for (int c = 0; c < channels; ++c) {
      const auto& ring = mesh_rings(8)[static_cast<std::size_t>(c % 7)];
      const int k = cuts[static_cast<std::size_t>(c)];
      ++leaving[ring[static_cast<std::size_t>(k)]];
      ++entering[ring[static_cast<std::size_t>((k + 1) % 8)]];
    }
    for (const auto* side : {&leaving, &entering})
      for (const auto& [gpu, count] : *side) CHECK(count <= (channels + 7) / 8);
  }
}

TEST_CASE("xgmi: one node's ring all-reduce runs every link at once (closed form)", "[nccl][xgmi]") {
  // 8 GPUs, links of 50 GB/s, forced ring/Simple: 28 channels over 7 arc-disjoint rings, so every
  // directed link carries one ring's 2(n-1)/n x S and the call takes 2(n-1)/n x S / (7 x 50 GB/s)
  // plus latencies. A ring that kept to one cycle would take 7 times as long.
  const std::string node =
      "{topology: cluster, nodes: 1, gpus_per_node: 8, gpu: cdna3, intra_link: xgmi, xgmi_bandwidth: 50GBps}";
  for (const auto& row : perf(node, 8, "1GiB", "4GiB", ", nccl_algorithm: ring, protocol: simple")) {
    INFO(row.bytes << " B: " << row.choice);
    const double closed = 2.0 * 7 / 8 * row.bytes / (7 * 50e9);
    CHECK(row.seconds >= closed);
    CHECK(row.seconds <= closed * 1.03);
  }
}

TEST_CASE("xgmi: RCCL's choice on MI300X nodes, with its reasons", "[nccl][xgmi][tuning]") {
  // One node: RCCL drops tree/Simple on gfx94x when the communicator is the node's GPUs, so large
  // calls run the ring (Simple); LL128 stays off on CDNA3.
  const NcclTuning one(rccl_system(1));
  CHECK(one.cost(NcclCollective::all_reduce, NcclAlgorithm::tree, Protocol::simple).bandwidth_GBps == 0);
  CHECK(choice_at(one, 1 << 30) == "ring/simple");
  CHECK_FALSE(one.enabled(NcclCollective::all_reduce, NcclAlgorithm::ring, Protocol::ll128));
  // Two nodes: model 5 rates tree/Simple at 0.11 of its bandwidth and corrects the ring between
  // nodes down to 0.1 below 512 MiB (log2(bytes / 64) < 23), so 64 MiB runs the tree; from 1 GiB
  // the ring's correction is 1 and the ring wins.
  const NcclTuning two(rccl_system(2));
  CHECK(choice_at(two, 64.0 * (1 << 20)) == "tree/simple");
  CHECK(choice_at(two, 1 << 30) == "ring/simple");
  // Four nodes: the tree's ratio is 0.59, still half the ring's at 1 GiB.
  const NcclTuning four(rccl_system(4));
  CHECK(choice_at(four, 64.0 * (1 << 20)) == "tree/simple");
  CHECK(choice_at(four, 4.0 * (1 << 30)) == "ring/simple");
  // The same choices from the simulated system: `aggsim perf` of mi300x.
  const auto rows = perf("{system: mi300x, nodes: 2}", 16, "64MiB", "1GiB");
  REQUIRE(rows.size() == 5);
  CHECK(rows.front().choice.rfind("tree/simple", 0) == 0);
  CHECK(rows.back().choice.rfind("ring/simple", 0) == 0);
}

TEST_CASE("xgmi: an XML platform declares a mesh node by its host property and routes", "[nccl][xgmi][xml]") {
  // Four GPUs, one 50 GB/s link per pair, each GPU with aggsim_intra_link = xgmi: RCCL's rings over
  // it take exactly the time they take on the generated mesh of the same rates.
  std::string xml =
      "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
      "<platform version=\"4.1\">\n  <zone id=\"node-0\" routing=\"Full\">\n";
  for (int g = 0; g < 4; ++g)
    xml += fmt::format(
        "    <host id=\"node-0-gpu-{}\" speed=\"100Gf\"><prop id=\"aggsim_node\" value=\"0\"/>"
        "<prop id=\"aggsim_intra_link\" value=\"xgmi\"/><prop id=\"aggsim_gpu\" value=\"cdna3\"/></host>\n",
        g);
  for (int a = 0; a < 4; ++a)
    for (int b = a + 1; b < 4; ++b)
      xml += fmt::format(
          "    <link id=\"x-{0}-{1}\" bandwidth=\"50GBps\" latency=\"1us\" "
          "sharing_policy=\"SPLITDUPLEX\"/>\n",
          a, b);
  for (int a = 0; a < 4; ++a)
    for (int b = a + 1; b < 4; ++b)
      xml += fmt::format(
          "    <route src=\"node-0-gpu-{0}\" dst=\"node-0-gpu-{1}\" symmetrical=\"NO\"><link_ctn "
          "id=\"x-{0}-{1}\" "
          "direction=\"UP\"/></route>\n"
          "    <route src=\"node-0-gpu-{1}\" dst=\"node-0-gpu-{0}\" symmetrical=\"NO\"><link_ctn "
          "id=\"x-{0}-{1}\" "
          "direction=\"DOWN\"/></route>\n",
          a, b);
  xml += "  </zone>\n</platform>\n";
  const auto dir = fresh_dir("xgmi-xml");
  write_file(dir / "mesh.xml", xml);
  const auto from_xml = perf("{file: " + (dir / "mesh.xml").string() + "}", 4, "64MiB", "1GiB");
  const auto generated = perf(
      "{topology: cluster, nodes: 1, gpus_per_node: 4, gpu: cdna3, intra_link: xgmi, xgmi_bandwidth: 50GBps}",
      4, "64MiB", "1GiB");
  REQUIRE(from_xml.size() == generated.size());
  for (std::size_t i = 0; i < generated.size(); ++i) {
    INFO(generated[i].bytes << " B");
    CHECK(from_xml[i].choice == generated[i].choice);
    CHECK(from_xml[i].seconds == Approx(generated[i].seconds).epsilon(1e-12));
  }
  fs::remove_all(dir);
}
