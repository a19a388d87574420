// The columns people lay beside hardware measurements: nccl-tests' algbw/busbw per aggregation call
// (collectives.csv) and per step, checked against closed forms and against the bytes the ranks
// sent, and the communication not hidden behind compute (exposed_comm_time_s).
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "support/cli.hpp"
#include "support/csv.hpp"

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

// A CSV as one map per row (column name -> cell text).
std::vector<std::map<std::string, std::string>> read_rows(const fs::path& csv) {
  const auto cells = parse_csv(read_file(csv));
  std::vector<std::map<std::string, std::string>> rows;
  for (std::size_t r = 1; r < cells.size(); ++r) {
    REQUIRE(cells[r].size() == cells[0].size());
    std::map<std::string, std::string> row;
    for (std::size_t c = 0; c < cells[0].size(); ++c) row[cells[0][c]] = cells[r][c];
    rows.push_back(row);
  }
  return rows;
}

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
  // One call per step, each the closed form, back to back.
  const auto calls = read_rows(run / "collectives.csv");
  REQUIRE(calls.size() == 3);
  for (std::size_t i = 0; i < calls.size(); ++i) {
    const auto& c = calls[i];
    CHECK(c.at("step") == std::to_string(i));
    CHECK(c.at("bucket") == "0");
    CHECK(c.at("rank_group") == "0-7");
    CHECK(c.at("algorithm") == "ring_allreduce");
    CHECK(c.at("nccl_algorithm").empty());
    CHECK(c.at("protocol").empty());
    CHECK(c.at("channels").empty());
    CHECK(c.at("dense_bytes") == "80000000");
    CHECK(c.at("wire_bytes") == "80000000");
    CHECK(std::stod(c.at("start_s")) == Approx(static_cast<double>(i) * t).epsilon(1e-9));
    CHECK(std::stod(c.at("time_s")) == Approx(t).epsilon(1e-9));
    CHECK(std::stod(c.at("end_s")) - std::stod(c.at("start_s")) == Approx(std::stod(c.at("time_s"))));
    CHECK(std::stod(c.at("algbw_GBps")) == Approx(S / t / 1e9).epsilon(1e-9));
    CHECK(std::stod(c.at("busbw_GBps")) == Approx(10.0).epsilon(1e-5));
  }
  const auto j = nlohmann::json::parse(read_file(run / "summary.json"));
  CHECK(j["algbw_GBps"].get<double>() == Approx(S / t / 1e9).epsilon(1e-9));
  CHECK(j["busbw_GBps"].get<double>() == Approx(S / t / 1e9 * 2 * (p - 1) / p).epsilon(1e-9));
  CHECK(j["exposed_comm_time_s"].get<double>() == Approx(t).epsilon(1e-9));
  CHECK(j["collective_calls"] == 3);
  CHECK(j["collective_time_s"].get<double>() == Approx(t).epsilon(1e-9));
  CHECK(j["collective_dense_bytes"].get<double>() == S);
  CHECK(j["collective_wire_bytes"].get<double>() == S);
}

TEST_CASE("with compression busbw counts the compressed bytes: still the link's bandwidth",
          "[outputs][busbw]") {
  // fp16 halves what the ring carries: t = 2(p-1)(a + (S/2)/(p b)). busbw, from the wire bytes, still
  // tends to the link bandwidth b; algbw, from the dense bytes, doubles. Before, busbw came from the
  // dense size and reported twice the link.
  const double S = 80e6, p = 8, a = 2e-9, b = 10e9;
  const auto run = run_scenario("busbw-fp16", R"(name: busbw_fp16
ranks: 8
steps: 2
platform: {topology: cluster, hosts: 8, bandwidth: 10GBps, latency: 1ns}
network: alpha_beta
model: {size: 80MB, math: off}
algorithm: {name: ring_allreduce}
compression: {name: fp16}
compute: {reduce_speed: 0}
)");
  const double t = 2 * (p - 1) * (a + S / 2 / (p * b));
  for (const auto& c : read_rows(run / "collectives.csv")) {
    CHECK(c.at("dense_bytes") == "80000000");
    CHECK(c.at("wire_bytes") == "40000000");
    CHECK(std::stod(c.at("time_s")) == Approx(t).epsilon(1e-9));  // encode and decode lie outside
    CHECK(std::stod(c.at("busbw_GBps")) == Approx(10.0).epsilon(1e-5));
    CHECK(std::stod(c.at("algbw_GBps")) == Approx(2 * 10.0 * p / (2 * (p - 1))).epsilon(1e-5));
  }
  for (const auto& row : read_steps(run)) {
    CHECK(std::stod(row.at("busbw_GBps")) == Approx(10.0).epsilon(1e-5));
    CHECK(std::stod(row.at("comm_time_s")) > t);  // the aggregation also encodes and decodes
  }
}

TEST_CASE("a DDP bucket's time is its own transfers, never the wait for the backward pass",
          "[outputs][busbw]") {
  // ResNet-50's buckets all-reduced while the backward pass goes on: each call takes the ring's
  // closed form for its own bytes, 2(p-1)(a + S_b/(p b)) (chunks differ by at most one element),
  // although the aggregation as a whole (comm_time_s) spans the backward pass.
  const double p = 4, a = 2e-6, b = 1.25e9;
  const auto run = run_scenario("busbw-ddp", std::string(R"(name: busbw_ddp
ranks: 4
steps: 2
platform: {topology: cluster, hosts: 4, bandwidth: 10Gbps, latency: 1us, speed: 1Tf}
network: alpha_beta
model: {layers: )") + AGGSIM_SOURCE_DIR + R"(/scenarios/models/resnet50.yaml, batch: 32, math: off}
algorithm: {name: ring_allreduce, granularity: layer, bucket: 25MB}
compute: {reduce_speed: 0}
)");
  const auto calls = read_rows(run / "collectives.csv");
  const auto steps = read_steps(run);
  const auto j = nlohmann::json::parse(read_file(run / "summary.json"));
  REQUIRE(calls.size() > 4);
  std::map<std::string, double> dense_per_step, time_per_step;
  for (const auto& c : calls) {
    const double bytes = std::stod(c.at("dense_bytes"));
    INFO("step " << c.at("step") << " bucket " << c.at("bucket"));
    // Uneven chunks differ by one element: 3.2 ns a ring step, below the tolerance.
    CHECK(std::stod(c.at("time_s")) == Approx(2 * (p - 1) * (a + bytes / p / b)).epsilon(1e-5));
    dense_per_step[c.at("step")] += bytes;
    time_per_step[c.at("step")] += std::stod(c.at("time_s"));
  }
  for (const auto& row : steps) {
    const std::string s = row.at("step");
    CHECK(dense_per_step.at(s) == j["model_bytes"].get<double>());        // the buckets tile the model
    CHECK(std::stod(row.at("comm_time_s")) > 1.5 * time_per_step.at(s));  // waits for the backward pass
    CHECK(std::stod(row.at("algbw_GBps")) ==
          Approx(dense_per_step.at(s) / time_per_step.at(s) / 1e9).epsilon(1e-12));
  }
}

TEST_CASE("collectives.csv adds up to steps.csv and summary.json, and busbw's bytes are what the ranks sent",
          "[outputs][busbw]") {
  // Rings send exactly wire bytes x bus factor per rank and call (here every chunk is whole): the
  // bytes busbw counts are the bytes the ranks put on their links, measured independently by the
  // message counters (steps.csv bytes_sent). All-gather: (p-1) payloads per rank.
  struct Case {
    std::string algorithm, compression;
    double factor_times_p;  // bytes sent per call / wire_bytes
  };
  const double p = 8;
  for (const Case& k :
       std::vector<Case>{{"ring_allreduce", "none", 2 * (p - 1)},
                         {"ring_allreduce", "{name: randomk, ratio: 0.25, shared_seed: true}", 2 * (p - 1)},
                         {"allgather", "{name: qsgd, levels: 4}", p * (p - 1)},
                         {"halving_doubling_allreduce", "none", 2 * (p - 1)}}) {
    INFO(k.algorithm << " + " << k.compression);
    const auto run = run_scenario("sums", R"(name: sums
ranks: 8
steps: 3
platform: {topology: cluster, hosts: 8, bandwidth: 10Gbps, latency: 1us}
model: {size: 8MB, proxy_dim: 64}
algorithm: {name: )" + k.algorithm + R"(}
compression: )" + (k.compression == "none" ? std::string("{name: none}") : k.compression) +
                                              "\n");
    const auto calls = read_rows(run / "collectives.csv");
    const auto steps = read_steps(run);
    const auto j = nlohmann::json::parse(read_file(run / "summary.json"));
    REQUIRE(calls.size() == steps.size());
    const double factor = k.algorithm == "allgather" ? p - 1 : 2 * (p - 1) / p;
    double dense = 0, wire = 0, time = 0;
    for (std::size_t i = 0; i < calls.size(); ++i) {
      const auto& c = calls[i];
      const double w = std::stod(c.at("wire_bytes")), t = std::stod(c.at("time_s"));
      CHECK(std::stod(steps[i].at("bytes_sent")) == Approx(w * k.factor_times_p).epsilon(1e-12));
      CHECK(std::stod(c.at("busbw_GBps")) == Approx(w * factor / t / 1e9).epsilon(1e-12));
      CHECK(std::stod(c.at("algbw_GBps")) == Approx(std::stod(c.at("dense_bytes")) / t / 1e9).epsilon(1e-12));
      CHECK(steps[i].at("busbw_GBps") == c.at("busbw_GBps"));  // one call: the step's own
      CHECK(t <= std::stod(steps[i].at("comm_time_s")) + 1e-15);
      dense += std::stod(c.at("dense_bytes")), wire += w, time += t;
    }
    CHECK(j["collective_calls"] == calls.size());
    CHECK(j["collective_time_s"].get<double>() ==
          Approx(time / static_cast<double>(calls.size())).epsilon(1e-12));
    CHECK(j["collective_wire_bytes"].get<double>() == Approx(wire / static_cast<double>(calls.size())));
    CHECK(j["algbw_GBps"].get<double>() == Approx(dense / time / 1e9).epsilon(1e-12));
    CHECK(j["busbw_GBps"].get<double>() == Approx(wire * factor / time / 1e9).epsilon(1e-12));
    fs::remove_all(run.parent_path());
  }
}

TEST_CASE("parameter servers get algbw only, decentralized schemes neither", "[outputs][busbw]") {
  struct Case {
    std::string algorithm, group;
    bool algbw;
  };
  for (const Case& k : std::vector<Case>{{"{name: parameter_server}", "0-3", true},
                                         {"{name: parameter_server, placement: dedicated}", "1-3", true},
                                         {"{name: neighbor_averaging}", "0-3", false},
                                         {"{name: gossipgrad, group_size: 2}", "0-3", false}}) {
    INFO(k.algorithm);
    const auto run = run_scenario("nobusbw", R"(name: nobusbw
ranks: 4
steps: 2
platform: {topology: cluster, hosts: 4}
model: {size: 1MB, math: off}
algorithm: )" + k.algorithm + "\n");
    for (const auto& row : read_steps(run)) {
      CHECK(row.at("algbw_GBps").empty() != k.algbw);
      CHECK(row.at("busbw_GBps").empty());
    }
    for (const auto& c : read_rows(run / "collectives.csv")) {
      CHECK(c.at("rank_group") == k.group);
      CHECK(std::stod(c.at("time_s")) > 0);
      CHECK(c.at("algbw_GBps").empty() != k.algbw);
      if (k.algbw)
        CHECK(std::stod(c.at("algbw_GBps")) == Approx(1e6 / std::stod(c.at("time_s")) / 1e9).epsilon(1e-12));
      CHECK(c.at("busbw_GBps").empty());
    }
    const auto j = nlohmann::json::parse(read_file(run / "summary.json"));
    CHECK(j["algbw_GBps"].is_null() != k.algbw);
    CHECK(j["busbw_GBps"].is_null());
    fs::remove_all(run.parent_path());
  }
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
