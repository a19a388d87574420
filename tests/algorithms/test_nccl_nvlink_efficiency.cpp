// NVLink's data share (platform.nvlink_efficiency, host property aggsim_nvlink_efficiency): the
// GPUs' links carry that share of their port's rate, so rings and trees over NVLink run at NCCL's own
// per-link figure (src/graph/topo.h), while NVLS, whose efficiency is a share of the port, and NCCL's
// graph search, which sees the port, stay where they were.
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <regex>

#include "nccl_fixture.hpp"
#include "support/refusal.hpp"

using namespace aggsim;
using namespace aggsim::test;

namespace {

// `column` of `aggsim perf`'s one row at `size` on `platform`.
double perf_at(const char* column, const std::string& platform, int ranks, const std::string& size,
               const std::string& keys = "") {
  const auto rows = nccl_perf_rows(platform, ranks, size, size, keys);
  REQUIRE(rows.size() == 1);
  return std::stod(rows[0].at(column));
}

double busbw(const std::string& platform, int ranks, const std::string& size, const std::string& keys = "") {
  return perf_at("busbw_GBps", platform, ranks, size, keys);
}

}  // namespace

TEST_CASE("an NVLink ring on one node runs at NCCL's per-link figure, not the port's signalling rate",
          "[nccl][nvlink]") {
  // A DGX A100: 12 NVLink 3 links of 25 GB/s each way a GPU, of which NCCL credits 20 a link
  // (SM80_NVLINK_BW): a ring's busbw tends to 12 x 20 = 240 GB/s. Published one-node runs reach 230 -
  // 235 (tests/data/README.md); at the port's 300 the model ran 27 % above them.
  const double a100 = busbw("{system: dgx_a100, nodes: 1}", 8, "8GiB");
  CHECK(a100 == Approx(240).epsilon(0.01));
  CHECK(a100 == Approx(235.1).epsilon(0.03));  // the OCI BM.GPU4.8 run's 8 GiB row
  // The share is the platform's: the same node without it runs at the port's rate.
  CHECK(busbw("{system: dgx_a100, nodes: 1, nvlink_efficiency: 1}", 8, "8GiB") == Approx(300).epsilon(0.01));
  // H100 without NVLS: 18 links x 20.6 (SM90_NVLINK_BW).
  CHECK(busbw("{system: dgx_h100, nodes: 1}", 8, "8GiB", ", nvls: off") == Approx(18 * 20.6).epsilon(0.01));
}

TEST_CASE("NVLS keeps its rate whatever NVLink's data share: its efficiency is a share of the port",
          "[nccl][nvlink][nvls]") {
  // kHopperNvlsEfficiency is NCCL's 0.85 of SM90_NVLINK_BW's 20.6 of a 25 GB/s link; over links built
  // at that share NVLS must move exactly as fast as over links at the full port.
  for (const char* system : {"dgx_h100", "dgx_b200"}) {
    INFO(system);
    const std::string with = fmt::format("{{system: {}, nodes: 1}}", system);
    const std::string without = fmt::format("{{system: {}, nodes: 1, nvlink_efficiency: 1}}", system);
    const double a = perf_at("time_s", with, 8, "1GiB", ", nccl_algorithm: nvls");
    const double b = perf_at("time_s", without, 8, "1GiB", ", nccl_algorithm: nvls");
    CHECK(a == Approx(b).epsilon(1e-9));
  }
  // NCCL's channel count (from the port's links) does not move either: 8 B200, 9 x 80 GB/s heads.
  const auto with = nccl_perf_rows("{system: dgx_a100, nodes: 1}", 8, "1GiB", "1GiB");
  const auto without = nccl_perf_rows("{system: dgx_a100, nodes: 1, nvlink_efficiency: 1}", 8, "1GiB", "1GiB");
  CHECK(with.at(0).at("choice") == without.at(0).at("choice"));
}

TEST_CASE("nvlink_efficiency: bad values and links it does not describe are refused where written",
          "[nccl][nvlink][refusal]") {
  const auto refused = [](const std::string& platform, const std::string& what) {
    const auto dir = fresh_dir("nvlink-eff");
    write_file(dir / "s.yaml",
               "ranks: 8\nsteps: 1\nplatform: " + platform + "\nalgorithm: {name: nccl_allreduce}\n");
    const auto r = run_aggsim({"run", "s.yaml", "--out", "out"}, dir);
    INFO(r.err);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Catch::Contains("nvlink_efficiency") && Catch::Contains(what));
    CHECK_FALSE(std::filesystem::exists(dir / "out/summary.json"));
  };
  refused("{topology: cluster, nodes: 1, gpus_per_node: 8, nvlink_efficiency: 0}", "s.yaml");
  refused("{topology: cluster, nodes: 1, gpus_per_node: 8, nvlink_efficiency: 1.2}", "s.yaml");
  refused("{system: mi300x, nodes: 1, nvlink_efficiency: 0.8}", "xgmi");
}

TEST_CASE("an XML platform declares NVLink's share per host: NCCL's model sees the port behind the links",
          "[nccl][nvlink][errors]") {
  const std::string xml = read_file(std::filesystem::path(AGGSIM_SOURCE_DIR) / "platforms/dgx_4x8.xml");
  const std::regex node_prop(R"re(<prop id="aggsim_node" value="(\d+)"/>)re");
  const auto with = [&](const std::string& props) { return std::regex_replace(xml, node_prop, "$&" + props); };
  const auto dir = fresh_dir("nvlink-xml");
  // Links written at 240 GB/s, declared 0.8 of their port: NCCL opens the channels of a 300 GB/s port
  // (12 links of 25 GB/s, two channels each), as it does on the file as shipped.
  std::string built = std::regex_replace(xml, std::regex(R"re(_link" bandwidth="300GBps")re"), "_link\" bandwidth=\"240GBps\"");
  built = std::regex_replace(built, node_prop, "$&<prop id=\"aggsim_nvlink_efficiency\" value=\"0.8\"/>");
  write_file(dir / "built.xml", built);
  const auto declared = nccl_perf_rows("{file: " + (dir / "built.xml").string() + "}", 32, "1GiB", "1GiB");
  const auto shipped =
      nccl_perf_rows("{file: " + (std::filesystem::path(AGGSIM_SOURCE_DIR) / "platforms/dgx_4x8.xml").string() + "}",
                     32, "1GiB", "1GiB");
  CHECK(declared.at(0).at("choice") == shipped.at(0).at("choice"));
  std::filesystem::remove_all(dir);
  check_refused(
      "ranks: 32\nplatform: {file: p.xml}\nmodel: {size: 1MB}\nalgorithm: {name: nccl_allreduce}\n",
      {"p.xml:14:", "aggsim_nvlink_efficiency: value=\"80%\" must be a share of the port's rate"},
      {{"p.xml", with(R"(<prop id="aggsim_nvlink_efficiency" value="80%"/>)")}});
}
