#pragma once
// Platforms and a helper the NCCL tests share.
#include <catch2/catch.hpp>
#include <filesystem>
#include <string>
#include <utility>

#include "support/cli.hpp"
#include "support/csv.hpp"

namespace aggsim::test {

// One node of 8 H100 (NVLink 4: 18 links of 25 GB/s each way, 450 GB/s) on NVSwitch.
const std::string kH100Node =
    "{topology: cluster, nodes: 1, gpus_per_node: 8, intra_bandwidth: 450GBps, intra_latency: 0.5us, "
    "nvswitch: true}";
// Two such nodes, 8 x 400 Gb/s InfiniBand NICs each (one per GPU).
const std::string kH100TwoNodes =
    "{topology: cluster, nodes: 2, gpus_per_node: 8, intra_bandwidth: 450GBps, intra_latency: 0.5us, "
    "nvswitch: true, nics_per_node: 8, nic_bandwidth: 400Gbps, bandwidth: 400Gbps, latency: 1us, "
    "fabric: infiniband}";
// One NVLink domain of 72 GPUs on NVSwitch at 900 GB/s each way (NCCL counts such a domain as one
// node).
const std::string kDomain72 =
    "{topology: cluster, nodes: 1, gpus_per_node: 72, intra_bandwidth: 900GBps, intra_latency: 0.5us, "
    "nvswitch: true}";

// Runs `yaml` (a scenario of one call) in `dir`: its call's "algorithm/protocol" and time_s.
inline std::pair<std::string, double> nccl_call_of(const std::filesystem::path& dir, const std::string& yaml) {
  write_file(dir / "s.yaml", yaml);
  const auto r = run_aggsim({"run", "s.yaml", "--out", "out", "--force"}, dir);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto calls = read_csv_rows(read_file(dir / "out" / "collectives.csv"));
  REQUIRE(calls.size() == 1);
  return {calls[0].at("nccl_algorithm") + "/" + calls[0].at("protocol"), std::stod(calls[0].at("time_s"))};
}

}  // namespace aggsim::test
