// What a run with a calibration says about the calibration's reach: summary.json's coverage flags
// per call size (as compare and perf print them), and the calibrations that do not fit the run:
// fitted for another algorithm family (an error), never measured across a link class (a warning),
// fitted on a fabric whose network model differs (an error) or merely another transport (a warning).
#include <catch2/catch.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "support/cli.hpp"

using namespace aggsim::test;
namespace fs = std::filesystem;

namespace {

std::string scenario(const std::string& algorithm, const std::string& size, int nodes, int gpus,
                     const std::string& fabric = "infiniband") {
  return "name: reach\nranks: " + std::to_string(nodes * gpus) +
         "\nsteps: 2\n"
         "platform: {topology: cluster, nodes: " +
         std::to_string(nodes) + ", gpus_per_node: " + std::to_string(gpus) +
         ", intra_bandwidth: 100GBps, intra_latency: 0.5us,\n"
         "           bandwidth: 100Gbps, latency: 1us, fabric: " +
         fabric + "}\nmodel: {size: " + size + ", math: off}\nalgorithm: " + algorithm +
         "\ncompute: {reduce_speed: 0}\ncalibration: cal.yaml\n";
}

// As aggsim calibrate writes it for nccl_allreduce, measured from 4 KiB to 1 MiB where NCCL ran
// ring/LL, on one node and across InfiniBand.
const char* kNcclCalibration = R"(format: 1
network: auto
algorithm: nccl_allreduce
factors:
  intra: [{from: 0B, latency: 1, bandwidth: 0.9}]
  inter: [{from: 0B, latency: 1, bandwidth: 0.8}]
nccl:
  base_latency_scale: 1.2
measured:
  min_size: 4KiB
  max_size: 1MiB
  choices: [ring/ll]
  link_classes: [intra, inter]
  fabric: infiniband
)";

nlohmann::json run_summary(const fs::path& dir, const std::string& scenario_text,
                           CliResult* result = nullptr) {
  write_file(dir / "s.yaml", scenario_text);
  fs::remove_all(dir / "out");
  const auto r = run_aggsim({"run", "s.yaml", "-q", "--out", "out"}, dir);
  if (result) *result = r;
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return nlohmann::json::parse(read_file(dir / "out" / "summary.json"));
}

}  // namespace

TEST_CASE("summary.json marks call sizes and NCCL choices outside what the calibration measured",
          "[calibrate][summary][coverage]") {
  const auto dir = fresh_dir("reach-summary");
  write_file(dir / "cal.yaml", kNcclCalibration);
  const std::string ring_ll = "{name: nccl_allreduce, nccl_algorithm: ring, protocol: ll}";

  // 512 KiB with ring/LL: inside on both counts.
  auto j = run_summary(dir, scenario(ring_ll, "512KiB", 2, 2));
  REQUIRE(j["calibration_sizes"].size() == 1);
  CHECK(j["calibration_sizes"][0]["wire_bytes"] == 512 * 1024);
  CHECK(j["calibration_sizes"][0]["calls"] == 2);
  CHECK(j["calibration_sizes"][0]["choice"] == "ring/ll");
  CHECK(j["calibration_sizes"][0]["in_measured_range"] == 1);
  CHECK(j["calibration_sizes"][0]["choice_observed"] == 1);
  CHECK(j["calibration_in_measured_range"] == 1);
  CHECK(j["calibration_choice_observed"] == 1);

  // 4 MiB with ring/Simple: beyond the largest size, and a protocol the data never showed.
  j = run_summary(dir,
                  scenario("{name: nccl_allreduce, nccl_algorithm: ring, protocol: simple}", "4MiB", 2, 2));
  CHECK(j["calibration_sizes"][0]["wire_bytes"] == 4 * 1024 * 1024);
  CHECK(j["calibration_sizes"][0]["choice"] == "ring/simple");
  CHECK(j["calibration_sizes"][0]["in_measured_range"] == 0);
  CHECK(j["calibration_sizes"][0]["choice_observed"] == 0);
  CHECK(j["calibration_in_measured_range"] == 0);
  CHECK(j["calibration_choice_observed"] == 0);

  // Without a calibration the fields are absent; a calibration that records no coverage gives null.
  write_file(dir / "cal.yaml",
             "format: 1\nnetwork: auto\nfactors:\n  inter: [{from: 0B, latency: 1, bandwidth: 0.8}]\n");
  j = run_summary(dir, scenario(ring_ll, "512KiB", 2, 2));
  CHECK(j["calibration_sizes"][0]["in_measured_range"].is_null());
  CHECK(j["calibration_sizes"][0]["choice_observed"].is_null());
  CHECK(j["calibration_in_measured_range"].is_null());
  std::string plain = scenario(ring_ll, "512KiB", 2, 2);
  plain.erase(plain.find("calibration: cal.yaml\n"));
  j = run_summary(dir, plain);
  CHECK_FALSE(j.contains("calibration_sizes"));
  CHECK_FALSE(j.contains("calibration_in_measured_range"));
}

TEST_CASE("a calibration fitted for another algorithm family is an input error at the calibration key",
          "[calibrate][family][errors]") {
  const auto dir = fresh_dir("reach-family");
  // NCCL's protocol costs used by a ring that does not model them.
  write_file(dir / "cal.yaml", kNcclCalibration);
  write_file(dir / "s.yaml", scenario("{name: ring_allreduce}", "1MiB", 2, 2));
  auto r = run_aggsim({"run", "s.yaml", "-q", "--out", "out"}, dir);
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("aggsim: error: s.yaml:9:14: calibration: cal.yaml was fitted for nccl_allreduce "
                   "(cal.yaml:8:3: nccl): its numbers are NCCL's protocol costs") != std::string::npos);
  CHECK_FALSE(fs::exists(dir / "out"));
  // The same file serves nccl_allreduce and the hierarchical all-reduce's NCCL stage.
  r = run_aggsim({"validate", "s.yaml", "--set", "algorithm={name: nccl_allreduce}"}, dir);
  INFO(r.err);
  CHECK(r.exit_code == 0);
  r = run_aggsim({"validate", "s.yaml", "--set", "algorithm={name: hierarchical_allreduce, inter: nccl}"},
                 dir);
  INFO(r.err);
  CHECK(r.exit_code == 0);

  // Per-size-step factors fitted for ring_allreduce, used by nccl_allreduce.
  write_file(dir / "cal.yaml",
             "format: 1\nnetwork: auto\nalgorithm: ring_allreduce\nfactors:\n"
             "  inter: [{from: 0B, latency: 14, bandwidth: 0.7}]\n");
  write_file(dir / "s.yaml", scenario("{name: nccl_allreduce}", "1MiB", 2, 2));
  r = run_aggsim({"run", "s.yaml", "-q", "--out", "out"}, dir);
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("aggsim: error: s.yaml:9:14: calibration: cal.yaml holds per-size-step factors fitted "
                   "for ring_allreduce (cal.yaml:3:12: algorithm)") != std::string::npos);
  // Those factors still serve the other per-step algorithms, and a file that does not say what it
  // was fitted for (written by hand) is taken as it is.
  r = run_aggsim({"validate", "s.yaml", "--set", "algorithm={name: recursive_doubling_allreduce}"}, dir);
  INFO(r.err);
  CHECK(r.exit_code == 0);
  write_file(dir / "cal.yaml",
             "format: 1\nnetwork: auto\nfactors:\n  inter: [{from: 0B, latency: 1, bandwidth: 0.7}]\n");
  r = run_aggsim({"validate", "s.yaml"}, dir);
  INFO(r.err);
  CHECK(r.exit_code == 0);
}

TEST_CASE(
    "a link class or fabric the calibration never measured: a warning, or an error where the model changes",
    "[calibrate][reach][errors]") {
  const auto dir = fresh_dir("reach-class");
  std::string one_node = kNcclCalibration;
  one_node.replace(one_node.find("link_classes: [intra, inter]\n  fabric: infiniband\n"),
                   std::string("link_classes: [intra, inter]\n  fabric: infiniband\n").size(),
                   "link_classes: [intra]\n");
  write_file(dir / "cal.yaml", one_node);
  CliResult r;
  run_summary(dir, scenario("{name: nccl_allreduce}", "512KiB", 2, 2), &r);
  CHECK(r.err.find("aggsim: warning: s.yaml:9:14: calibration: cal.yaml was fitted on measurements inside "
                   "one node (cal.yaml:13:17: link_classes): links between nodes keep the platform's values "
                   "and NCCL's network costs, not calibrated") != std::string::npos);
  run_summary(dir, scenario("{name: nccl_allreduce}", "512KiB", 1, 4), &r);  // inside one node: as measured
  CHECK(r.err.find("warning") == std::string::npos);

  // Fitted on InfiniBand: RoCE is another transport (extrapolated), Ethernet another network model.
  write_file(dir / "cal.yaml", kNcclCalibration);
  run_summary(dir, scenario("{name: nccl_allreduce}", "512KiB", 2, 2, "roce"), &r);
  CHECK(r.err.find("aggsim: warning: s.yaml:9:14: calibration: cal.yaml was fitted on infiniband "
                   "(cal.yaml:14:11: fabric), and this platform's fabric is roce: links between nodes are "
                   "extrapolated") != std::string::npos);
  write_file(dir / "s.yaml", scenario("{name: nccl_allreduce}", "512KiB", 2, 2, "ethernet"));
  r = run_aggsim({"run", "s.yaml", "-q", "--out", "eth"}, dir);
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("aggsim: error: s.yaml:9:14: calibration: cal.yaml was fitted on infiniband "
                   "(cal.yaml:14:11: fabric), and this platform's fabric is ethernet: under network auto the "
                   "two run different network models") != std::string::npos);
  CHECK_FALSE(fs::exists(dir / "eth"));
  // One node crosses no fabric.
  run_summary(dir, scenario("{name: nccl_allreduce}", "512KiB", 1, 4, "ethernet"), &r);

  // A garbled coverage entry is an error at its line.
  std::string bad = kNcclCalibration;
  bad.replace(bad.find("[intra, inter]"), std::string("[intra, inter]").size(), "[intra, nvlink]");
  write_file(dir / "cal.yaml", bad);
  r = run_aggsim({"validate", "s.yaml"}, dir);
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("cal.yaml:13:25: measured.link_classes[1]: must be intra or inter (got 'nvlink')") !=
        std::string::npos);
}
