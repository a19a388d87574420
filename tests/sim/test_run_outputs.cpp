// The run folder: contract (files, keys, columns), determinism, atomic replacement, --set.
#include <catch2/catch.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "support/cli.hpp"

using namespace aggsim::test;
namespace fs = std::filesystem;

namespace {

const char* kScenario = R"(name: outputs
seed: 3
ranks: 8
steps: 4
platform: {topology: cluster, hosts: 8, bandwidth: 10Gbps, latency: 1us}
network: alpha_beta
model: {size: 8MB, proxy_dim: 1000}
algorithm: {name: ring_allreduce, op: avg}
compute: {reduce_speed: 0}
)";

nlohmann::json summary_of(const fs::path& dir) {
  return nlohmann::json::parse(read_file(dir / "summary.json"));
}

}  // namespace

TEST_CASE("a run writes resolved.yaml, summary.json and steps.csv with the contract's fields", "[outputs]") {
  const auto dir = fresh_dir("outputs");
  write_file(dir / "s.yaml", kScenario);
  const auto r = run_aggsim({"run", "s.yaml", "--out", "run"}, dir);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto j = summary_of(dir / "run");
  for (const char* key : {"aggsim_version", "simgrid_version", "seed", "ranks", "steps", "sim_time_s",
                          "mean_step_time_s", "bytes_sent"})
    CHECK(j.contains(key));
  CHECK(j["simgrid_version"].get<std::string>().rfind("3.32", 0) == 0);
  // The layout's version comes first, so a reader sees it before anything it might misread.
  CHECK(read_file(dir / "run" / "summary.json").rfind("{\n  \"format_version\": 1,\n", 0) == 0);
  CHECK(j["seed"] == 3);
  CHECK(j["ranks"] == 8);
  CHECK(j["steps"] == 4);
  // Ring all-reduce: each rank sends 2(p-1) chunks of S/p bytes per step.
  const double S = 8e6, p = 8;
  CHECK(j["bytes_sent"].get<double>() == 4 * p * 2 * (p - 1) * (S / p));
  const double step = 2 * (p - 1) * (2e-6 + S / p / 1.25e9);
  CHECK(j["mean_step_time_s"].get<double>() == Approx(step).epsilon(1e-9));
  CHECK(j["sim_time_s"].get<double>() == Approx(4 * step).epsilon(1e-9));

  const std::string csv = read_file(dir / "run" / "steps.csv");
  const std::string header = csv.substr(0, csv.find('\n'));
  CHECK(header.rfind("step,step_time_s,comm_time_s", 0) == 0);
  CHECK(header.find("bytes_sent") != std::string::npos);
  CHECK(std::count(csv.begin(), csv.end(), '\n') == 5);      // header + 4 steps
  CHECK(r.out.find("ring_allreduce") != std::string::npos);  // the human summary
}

TEST_CASE("the same scenario and seed give byte-identical outputs", "[outputs][determinism]") {
  const auto dir = fresh_dir("determinism");
  write_file(dir / "s.yaml", kScenario);
  REQUIRE(run_aggsim({"run", "s.yaml", "--out", "a"}, dir).exit_code == 0);
  REQUIRE(run_aggsim({"run", "s.yaml", "--out", "b"}, dir).exit_code == 0);
  for (const char* f : {"resolved.yaml", "summary.json", "steps.csv", "collectives.csv"}) {
    INFO(f);
    CHECK(!read_file(dir / "a" / f).empty());
    CHECK(read_file(dir / "a" / f) == read_file(dir / "b" / f));
  }
}

TEST_CASE("resolved.yaml reloads to the same scenario", "[outputs]") {
  const auto dir = fresh_dir("resolved");
  write_file(dir / "s.yaml", kScenario);
  REQUIRE(run_aggsim({"run", "s.yaml", "--out", "a"}, dir).exit_code == 0);
  REQUIRE(run_aggsim({"run", "a/resolved.yaml", "--out", "b"}, dir).exit_code == 0);
  CHECK(read_file(dir / "a" / "resolved.yaml") == read_file(dir / "b" / "resolved.yaml"));
  CHECK(read_file(dir / "a" / "summary.json") == read_file(dir / "b" / "summary.json"));
}

TEST_CASE("set overrides change keys, and a failed run leaves an existing folder untouched", "[outputs]") {
  const auto dir = fresh_dir("set");
  write_file(dir / "s.yaml", kScenario);
  REQUIRE(run_aggsim({"run", "s.yaml", "--out", "run", "--set", "ranks=4", "--set", "algorithm.op=sum"}, dir)
              .exit_code == 0);
  const auto before = read_file(dir / "run" / "summary.json");
  CHECK(summary_of(dir / "run")["ranks"] == 4);
  CHECK(summary_of(dir / "run")["op"] == "sum");
  // A rerun that fails validation must not destroy the previous results.
  const auto bad = run_aggsim({"run", "s.yaml", "--out", "run", "--set", "ranks=100"}, dir);
  CHECK(bad.exit_code == 2);
  CHECK(read_file(dir / "run" / "summary.json") == before);
  // A successful rerun of another scenario replaces the folder whole, when asked to (--force).
  REQUIRE(run_aggsim({"run", "s.yaml", "--out", "run", "--force"}, dir).exit_code == 0);
  CHECK(summary_of(dir / "run")["ranks"] == 8);
}

TEST_CASE("aggsim list names the algorithms, compressors, topologies and presets", "[outputs]") {
  const auto r = run_aggsim({"list"});
  REQUIRE(r.exit_code == 0);
  for (const char* name : {"ring_allreduce", "none", "cluster", "lv08", "alpha_beta", "ns3", "hosts"})
    CHECK(r.out.find(name) != std::string::npos);
}

TEST_CASE("trace outputs work on an XML cluster platform and account for every byte", "[outputs][trace]") {
  // Every message leaves its host through that host's _UP link, exactly once.
  const auto dir = fresh_dir("xmltrace");
  const auto r = run_aggsim({"run", "scenarios/default.yaml", "--out", (dir / "run").string(), "--set",
                             "output.trace=true", "--set", "steps=1"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  REQUIRE(fs::exists(dir / "run" / "trace.json"));
  const std::string links = read_file(dir / "run" / "links.csv");
  double up_bytes = 0;
  std::istringstream in(links);
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    const auto name = line.substr(0, line.find(','));
    if (name.size() > 3 && name.compare(name.size() - 3, 3, "_UP") == 0) {
      std::istringstream fields(line);
      std::string field;
      for (int i = 0; i < 4; ++i) std::getline(fields, field, ',');  // name, bandwidth, latency, bytes
      up_bytes += std::stod(field);
    }
  }
  CHECK(up_bytes == summary_of(dir / "run")["bytes_sent"].get<double>());
  CHECK(up_bytes > 0);
}
