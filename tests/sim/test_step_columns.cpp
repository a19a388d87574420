// The columns people lay beside hardware measurements: nccl-tests' algbw/busbw for all-reduce
// algorithms and the communication not hidden behind compute (exposed_comm_time_s).
#include <catch2/catch.hpp>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "support/cli.hpp"

using namespace aggsim::test;
namespace fs = std::filesystem;

namespace {

// steps.csv as one map per row (column name -> cell text).
std::vector<std::map<std::string, std::string>> read_steps(const fs::path& run) {
  std::istringstream in(read_file(run / "steps.csv"));
  std::vector<std::string> header;
  std::vector<std::map<std::string, std::string>> rows;
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> cells;
    std::stringstream ss(line);
    for (std::string cell; std::getline(ss, cell, ',');) cells.push_back(cell);
    if (!line.empty() && line.back() == ',') cells.emplace_back();
    if (header.empty()) {
      header = cells;
      continue;
    }
    REQUIRE(cells.size() == header.size());
    std::map<std::string, std::string> row;
    for (std::size_t i = 0; i < cells.size(); ++i) row[header[i]] = cells[i];
    rows.push_back(row);
  }
  return rows;
}

fs::path run_scenario(const std::string& tag, const std::string& yaml) {
  const auto dir = fresh_dir(tag);
  write_file(dir / "s.yaml", yaml);
  const auto r = run_aggsim({"run", "s.yaml", "--out", "run", "-q"}, dir);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return dir / "run";
}

}  // namespace

TEST_CASE("algbw and busbw follow nccl-tests' definitions on a ring all-reduce", "[outputs][busbw]") {
  // alpha-beta ring: t = 2(p-1)(a + S/(p b)), so busbw = algbw 2(p-1)/p = (S/p) / (a + S/(p b)),
  // which tends to the link bandwidth b as the latency a vanishes (why nccl-tests reports it).
  const double S = 80e6, p = 8, a = 2e-9, b = 10e9;  // a: two 1 ns links per route (host, switch, host)
  const auto run = run_scenario("busbw", R"(name: busbw
ranks: 8
steps: 3
platform: {topology: cluster, hosts: 8, bandwidth: 10GBps, latency: 1ns}
network: alpha_beta
model: {size: 80MB, math: off}
algorithm: {name: ring_allreduce}
compute: {reduce_speed: 0}
)");
  const double t = 2 * (p - 1) * (a + S / (p * b));
  for (const auto& row : read_steps(run)) {
    CHECK(std::stod(row.at("comm_time_s")) == Approx(t).epsilon(1e-9));
    CHECK(std::stod(row.at("algbw_GBps")) == Approx(S / t / 1e9).epsilon(1e-9));
    CHECK(std::stod(row.at("busbw_GBps")) == Approx((S / p) / (a + S / (p * b)) / 1e9).epsilon(1e-9));
    CHECK(std::stod(row.at("busbw_GBps")) == Approx(10.0).epsilon(1e-5));
    CHECK(std::stod(row.at("exposed_comm_time_s")) == std::stod(row.at("comm_time_s")));  // no compute
  }
  const auto j = nlohmann::json::parse(read_file(run / "summary.json"));
  CHECK(j["algbw_GBps"].get<double>() == Approx(S / t / 1e9).epsilon(1e-9));
  CHECK(j["busbw_GBps"].get<double>() == Approx(S / t / 1e9 * 2 * (p - 1) / p).epsilon(1e-9));
  CHECK(j["exposed_comm_time_s"].get<double>() == Approx(t).epsilon(1e-9));
}

TEST_CASE("schemes that are not all-reduces leave the bandwidth columns empty", "[outputs][busbw]") {
  const auto run = run_scenario("nobusbw", R"(name: nobusbw
ranks: 4
steps: 2
platform: {topology: cluster, hosts: 4}
model: {size: 1MB, math: off}
algorithm: {name: parameter_server}
)");
  for (const auto& row : read_steps(run)) {
    CHECK(row.at("algbw_GBps").empty());
    CHECK(row.at("busbw_GBps").empty());
  }
  const auto j = nlohmann::json::parse(read_file(run / "summary.json"));
  CHECK(j["algbw_GBps"].is_null());
  CHECK(j["busbw_GBps"].is_null());
}

TEST_CASE("exposed communication is what overlapping buckets leave after the backward pass",
          "[outputs][overlap]") {
  // Identical ranks: a step is the compute, then whatever aggregation remains after it.
  const std::string base = R"(name: overlap
ranks: 4
steps: 3
platform: {topology: cluster, hosts: 4, bandwidth: 10Gbps, latency: 1us, speed: 10Tf}
network: alpha_beta
model: {layers: )" + std::string(AGGSIM_SOURCE_DIR) +
                           R"(/scenarios/models/resnet50.yaml, batch: 32, math: off}
algorithm: {name: ring_allreduce, granularity: GRANULARITY, bucket: 25MB}
)";
  auto with = [&](const std::string& granularity) {
    std::string yaml = base;
    yaml.replace(yaml.find("GRANULARITY"), 11, granularity);
    return read_steps(run_scenario("overlap-" + granularity, yaml));
  };
  for (const auto& row : with("layer")) {
    const double step = std::stod(row.at("step_time_s")), compute = std::stod(row.at("compute_time_s"));
    const double comm = std::stod(row.at("comm_time_s")), exposed = std::stod(row.at("exposed_comm_time_s"));
    CHECK(step == Approx(compute + exposed).epsilon(1e-12));
    CHECK(exposed < comm);  // the buckets before the last were hidden behind the backward pass
    CHECK(exposed > 0);
  }
  for (const auto& row : with("model")) {  // one all-reduce after the backward pass: nothing hidden
    CHECK(std::stod(row.at("exposed_comm_time_s")) == std::stod(row.at("comm_time_s")));
    CHECK(std::stod(row.at("step_time_s")) ==
          Approx(std::stod(row.at("compute_time_s")) + std::stod(row.at("comm_time_s"))).epsilon(1e-12));
  }
}

TEST_CASE("every row's times fit in its step: compute, comm <= step, exposed <= comm", "[outputs][window]") {
  // Ranks are not in lockstep: a rank that ends a step early (uneven ring chunks, a tree's early
  // leaves, gossip, asynchronous schemes, stragglers) starts the next one inside the previous step's
  // window. Before the columns were clipped to the step's window, each of these cases had rows with
  // comm_time_s (and, with stragglers and asynchronous averaging, compute_time_s) above step_time_s.
  const std::string table = std::string(AGGSIM_SOURCE_DIR) + "/scenarios/models/lenet.yaml";
  const std::vector<std::string> algorithms = {
      "{name: ring_allreduce}",  // 12 ranks: chunks of 4 MB differ by one element
      "{name: halving_doubling_allreduce}",
      "{name: tree_allreduce, chunks: 4}",
      "{name: double_binary_tree_allreduce, chunks: 8}",
      "{name: gossipgrad, group_size: 2}",  // 6 subgroups
      "{name: gossipgrad, group_size: 2, asynchronous: true, staleness: 2}",
      "{name: gossipgrad, group_size: 3, schedule: cube}",
      "{name: neighbor_averaging, asynchronous: true, staleness: 2}",
      "{name: parameter_server, asynchronous: true, staleness: 2}",
      "{name: ring_allreduce, granularity: layer, bucket: 100kB}",
  };
  const std::vector<std::string> models = {"{size: 4MB, proxy_dim: 50}",
                                           "{layers: " + table + ", batch: 64, proxy_dim: 50}"};
  int rows = 0;
  for (const auto& algorithm : algorithms)
    for (const auto& model : models) {
      INFO(algorithm << ", model " << model);
      const auto run = run_scenario("window", R"(name: window
seed: 5
ranks: 12
steps: 6
platform: {topology: cluster, hosts: 12, bandwidth: 10Gbps, latency: 1us, speed: 1Tf}
network: alpha_beta
model: )" + model + R"(
compute: {straggler: {distribution: lognormal, sigma: 0.5}}
algorithm: )" + algorithm + "\n");
      for (const auto& row : read_steps(run)) {
        INFO("step " << row.at("step"));
        const double step = std::stod(row.at("step_time_s")), comm = std::stod(row.at("comm_time_s"));
        const double compute = std::stod(row.at("compute_time_s"));
        const double exposed = std::stod(row.at("exposed_comm_time_s"));
        CHECK(comm <= step);
        CHECK(compute <= step);
        CHECK(exposed <= comm);
        ++rows;
      }
      fs::remove_all(run.parent_path());
    }
  CHECK(rows == static_cast<int>(algorithms.size() * models.size()) * 6);
}
