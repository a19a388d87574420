// Every collective under its own name: nccl_allreduce's reduce-scatter, all-gather and broadcast are
// written as what they are (collectives.csv's `collective` and `algorithm`, summary.json's
// `collective`), and their bus bandwidth uses nccl-tests' factor of that collective, the same in
// collectives.csv, steps.csv, summary.json and `aggsim perf`; perf's last column has a header, and
// perf, calibrate and compare read --collective with one parser.
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "support/cli.hpp"
#include "support/csv.hpp"

using namespace aggsim::test;
namespace fs = std::filesystem;

namespace {

// One node of 8 GPUs on 100 GB/s links; NCCL's ring on Simple, math off.
const char* kScenario = R"(name: names
ranks: 8
steps: 2
platform: {topology: cluster, nodes: 1, gpus_per_node: 8, intra_bandwidth: 100GBps, intra_latency: 1us}
network: alpha_beta
model: {size: 8MiB, math: off}
algorithm: {name: nccl_allreduce, nccl_algorithm: ring, protocol: simple}
compute: {reduce_speed: 0}
)";

struct Expected {
  std::string collective, algorithm;
  double factor;  // nccl-tests' bus factor on 8 ranks, applied to the collective's whole buffer
};

double ratio(const std::string& busbw, const std::string& algbw) {
  return std::stod(busbw) / std::stod(algbw);
}

}  // namespace

TEST_CASE("nccl_allreduce's other collectives are written under their names with nccl-tests' bus factor",
          "[outputs][collectives][nccl]") {
  const auto dir = fresh_dir("collective-names");
  write_file(dir / "s.yaml", kScenario);
  const std::vector<Expected> cases = {{"all_reduce", "nccl_allreduce", 2.0 * 7 / 8},
                                       {"reduce_scatter", "nccl_reducescatter", 7.0 / 8},
                                       {"all_gather", "nccl_allgather", 7.0 / 8},
                                       {"broadcast", "nccl_broadcast", 1.0}};
  for (const auto& e : cases) {
    INFO(e.collective);
    const std::string out = "out_" + e.collective;
    auto r = run_aggsim({"run", "s.yaml", "--set", "algorithm.collective=" + e.collective, "--out", out}, dir);
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    const auto calls = read_csv_rows(read_file(dir / out / "collectives.csv"));
    REQUIRE(calls.size() == 2);
    for (const auto& c : calls) {
      CHECK(c.at("collective") == e.collective);
      CHECK(c.at("algorithm") == e.algorithm);
      CHECK(c.at("nccl_algorithm") == "ring");
      CHECK(ratio(c.at("busbw_GBps"), c.at("algbw_GBps")) == Approx(e.factor).epsilon(1e-9));
    }
    for (const auto& s : read_csv_rows(read_file(dir / out / "steps.csv")))
      CHECK(ratio(s.at("busbw_GBps"), s.at("algbw_GBps")) == Approx(e.factor).epsilon(1e-9));
    const auto summary = nlohmann::json::parse(read_file(dir / out / "summary.json"));
    CHECK(summary["collective"] == e.collective);
    CHECK(summary["algorithm"] == "nccl_allreduce");  // the scenario's key, as written
    CHECK(summary["busbw_GBps"].get<double>() / summary["algbw_GBps"].get<double>() ==
          Approx(e.factor).epsilon(1e-9));
    // aggsim perf: the same factor over its own time.
    r = run_aggsim({"perf", "s.yaml", "--collective", e.collective, "--min", "8MiB", "--max", "8MiB", "--csv",
                    "p_" + e.collective + ".csv"},
                   dir);
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    const auto rows = read_csv_rows(read_file(dir / ("p_" + e.collective + ".csv")));
    REQUIRE(rows.size() == 1);
    CHECK(rows[0].at("choice") == "ring/simple");
    CHECK(ratio(rows[0].at("busbw_GBps"), rows[0].at("algbw_GBps")) == Approx(e.factor).epsilon(1e-5));
  }
  // The all-gather algorithm counts each rank's payload: its factor on those bytes is p - 1.
  auto r = run_aggsim({"run", "s.yaml", "--set", "algorithm={name: allgather}", "--out", "out_allgather"}, dir);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  for (const auto& c : read_csv_rows(read_file(dir / "out_allgather" / "collectives.csv"))) {
    CHECK(c.at("collective") == "all_gather");
    CHECK(c.at("algorithm") == "allgather");
    CHECK(ratio(c.at("busbw_GBps"), c.at("algbw_GBps")) == Approx(7.0).epsilon(1e-9));
  }
  fs::remove_all(dir);
}

TEST_CASE("perf's choice column has a header, and perf, calibrate and compare read --collective alike",
          "[perf][calibrate][cli]") {
  const auto dir = fresh_dir("collective-option");
  write_file(dir / "s.yaml", kScenario);
  write_file(dir / "m.csv", "collective,ranks,nodes,bytes,time\nall_reduce,8,1,1048576,0.0001\n");
  auto r = run_aggsim({"perf", "s.yaml", "--min", "1MiB", "--max", "1MiB"}, dir);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto header = r.out.find("#wrong");
  REQUIRE(header != std::string::npos);
  CHECK(r.out.substr(header, r.out.find('\n', header) - header).find("choice") != std::string::npos);
  CHECK(r.out.find("ring/simple") != std::string::npos);
  // Every verb takes every name, sendrecv included (perf: one ring step of every rank at once).
  r = run_aggsim({"perf", "s.yaml", "--collective", "sendrecv", "--min", "1MiB", "--max", "1MiB", "--csv", "sr.csv"},
                 dir);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto sr = read_csv_rows(read_file(dir / "sr.csv"));
  REQUIRE(sr.size() == 1);
  CHECK(ratio(sr[0].at("busbw_GBps"), sr[0].at("algbw_GBps")) == Approx(1.0));
  // A name none of them takes gets one message from each, the same words.
  for (const std::string bad : {"allreduce", "alltoall", "AllGather"}) {
    std::vector<std::string> messages;
    for (const auto& verb : {std::vector<std::string>{"perf", "s.yaml"},
                                                std::vector<std::string>{"calibrate", "s.yaml", "m.csv", "--out",
                                                                         "c.yaml"},
                                                std::vector<std::string>{"compare", "s.yaml", "m.csv"}}) {
      std::vector<std::string> args = verb;
      args.insert(args.end(), {"--collective", bad});
      const auto refused = run_aggsim(args, dir);
      INFO(verb.front() << " " << bad << ": " << refused.err);
      CHECK(refused.exit_code == 2);
      messages.push_back(refused.err);
    }
    CHECK(messages[0].find(fmt::format("--collective: '{}' is not a collective", bad)) != std::string::npos);
    CHECK(messages[0].find("all_reduce | all_gather | reduce_scatter | broadcast | sendrecv") != std::string::npos);
    CHECK(messages[1] == messages[0]);
    CHECK(messages[2] == messages[0]);
  }
  // Another spelling of a name gets the name it means.
  r = run_aggsim({"perf", "s.yaml", "--collective", "allreduce"}, dir);
  CHECK(r.err.find("(did you mean 'all_reduce'?)") != std::string::npos);
  CHECK(!fs::exists(dir / "c.yaml"));
  fs::remove_all(dir);
}
