#pragma once
// Platforms and helpers the NCCL tests share.
#include <fmt/format.h>

#include <Eigen/Core>
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "sim/api/reduce_op.hpp"
#include "support/cli.hpp"
#include "support/csv.hpp"

namespace aggsim::test {

// Each of `v`'s vectors, as NCCL's math functions take their inputs.
inline std::vector<const Eigen::VectorXf*> pointers(const std::vector<Eigen::VectorXf>& v) {
  std::vector<const Eigen::VectorXf*> out;
  for (const auto& x : v) out.push_back(&x);
  return out;
}

// Every element of `out` within (members + 1) float roundings of the exact reduction of `inputs`
// relative to its terms (avg: each input scaled by 1 / members), min and max exact.
inline void check_reduced(const Eigen::VectorXf& out, const std::vector<Eigen::VectorXf>& inputs, ReduceKind kind) {
  const int p = static_cast<int>(inputs.size());
  for (Eigen::Index i = 0; i < out.size(); ++i) {
    double exact = inputs[0][i], magnitude = 0;
    for (int m = 0; m < p; ++m) {
      const double x = inputs[static_cast<std::size_t>(m)][i];
      if (m > 0) exact = kind == ReduceKind::min ? std::min(exact, x) : kind == ReduceKind::max ? std::max(exact, x) : exact + x;
      magnitude += std::abs(x);
    }
    if (kind == ReduceKind::avg) {
      exact /= p;
      magnitude /= p;
    }
    const bool exact_op = kind == ReduceKind::min || kind == ReduceKind::max;
    CHECK(std::abs(out[i] - exact) <= (exact_op ? 0.0 : (p + 1) * std::ldexp(1.0, -24) * magnitude));
  }
}

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
inline std::pair<std::string, double> nccl_call_of(const std::filesystem::path& dir,
                                                   const std::string& yaml) {
  write_file(dir / "s.yaml", yaml);
  const auto r = run_aggsim({"run", "s.yaml", "--out", "out", "--force"}, dir);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto calls = read_csv_rows(read_file(dir / "out" / "collectives.csv"));
  REQUIRE(calls.size() == 1);
  return {calls[0].at("nccl_algorithm") + "/" + calls[0].at("protocol"), std::stod(calls[0].at("time_s"))};
}

// `aggsim perf` of nccl_allreduce on `platform` with `ranks`, from `min` to `max` (algorithm_keys:
// more keys of the algorithm, as ", protocol: ll"): its CSV rows.
inline std::vector<std::map<std::string, std::string>> nccl_perf_rows(
    const std::string& platform, int ranks, const std::string& min, const std::string& max,
    const std::string& algorithm_keys = "") {
  const auto dir = fresh_dir("nccl-perf");
  write_file(dir / "s.yaml",
             fmt::format("name: perf\nranks: {}\nsteps: 1\nplatform: {}\nmodel: {{size: 1MB, math: off}}\n"
                         "algorithm: {{name: nccl_allreduce{}}}\n",
                         ranks, platform, algorithm_keys));
  const auto r = run_aggsim({"perf", "s.yaml", "--min", min, "--max", max, "--csv", "p.csv"}, dir);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  auto rows = read_csv_rows(read_file(dir / "p.csv"));
  std::filesystem::remove_all(dir);
  return rows;
}

}  // namespace aggsim::test
