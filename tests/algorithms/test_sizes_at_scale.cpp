// Sizes at 2^31, 2^53 and 2^63: byte and element counts held in 64 bits (a ring's closed-form time at
// 2^31 elements and at 2^53 bytes), loop counts that no cast can wrap (MSCCL's and NCCL's loops gave
// 7 ms and 5.4e10 GB/s at 64 PiB), and sizes a simulation cannot step through refused at model.size.
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "alpha_beta.hpp"
#include "support/cli.hpp"

using namespace aggsim::test;
namespace fs = std::filesystem;

namespace {

constexpr double k2to31 = 2147483648.0, k2to53 = 9007199254740992.0;

// `aggsim validate` of a 4-rank scenario running `algorithm` on a model of `size`.
CliResult validate_size(const std::string& algorithm, const std::string& size) {
  const auto dir = fresh_dir("sizes");
  write_file(dir / "s.yaml", fmt::format("name: s\nranks: 4\nsteps: 1\n"
                                         "platform: {{topology: cluster, hosts: 4, bandwidth: 100Gbps}}\n"
                                         "model: {{size: {}, math: off}}\nalgorithm: {}\n",
                                         size, algorithm));
  CliResult r = run_aggsim({"validate", "s.yaml"}, dir);
  fs::remove_all(dir);
  return r;
}

}  // namespace

TEST_CASE("byte counts are 64-bit: a ring all-reduce takes its closed-form time at 2^31 elements and 2^53 B",
          "[sizes]") {
  const int p = 4;
  for (const double n : {4 * k2to31, k2to53}) {
    INFO(n);
    const std::string yaml = cluster_scenario_with_model("name: ring_allreduce", p, "sum",
                                                         fmt::format("{{size: {:.0f}, math: off}}", n));
    const double t = step_times(yaml).at(0);
    CHECK(t == Approx(2.0 * (p - 1) * (kAlpha + n / p / kBeta)).epsilon(1e-9));
  }
}

TEST_CASE("an MSCCL program's loop at 2^31 B runs at the links' rate, twice the time of 2^30 B",
          "[sizes][msccl]") {
  // 4 GPUs on 100 Gb/s links: a ring moves 2 (p - 1) / p of the buffer, so busbw stays below 12.5 GB/s
  // (at 64 PiB a loop count cast to int reported 5.4e10 GB/s).
  const auto dir = fresh_dir("sizes-msccl");
  double time_at[2] = {0, 0};
  for (int k = 0; k < 2; ++k) {
    write_file(dir / "s.yaml",
               fmt::format("name: s\nranks: 4\nsteps: 1\nplatform: {{topology: cluster, hosts: 4, bandwidth: "
                           "100Gbps, latency: 1us}}\nmodel: {{size: {:.0f}, math: off}}\n"
                           "algorithm: {{name: msccl, program: {}/tests/data/msccl/ring_allreduce_4.xml}}\n"
                           "compute: {{reduce_speed: 0}}\n",
                           k2to31 / (k == 0 ? 2 : 1), AGGSIM_SOURCE_DIR));
    const CliResult r = run_aggsim({"run", "s.yaml", "--out", "out", "-q", "--force"}, dir);
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    const auto j = nlohmann::json::parse(read_file(dir / "out" / "summary.json"));
    time_at[k] = j["mean_step_time_s"].get<double>();
    CHECK(j["busbw_GBps"].get<double>() < 12.5);
    CHECK(j["busbw_GBps"].get<double>() > 11);
  }
  CHECK(time_at[1] / time_at[0] == Approx(2).epsilon(0.01));
  fs::remove_all(dir);
}

TEST_CASE("sizes whose loops or pieces a simulation cannot step through are refused at model.size",
          "[sizes]") {
  const std::string msccl =
      fmt::format("{{name: msccl, program: {}/tests/data/msccl/ring_allreduce_4.xml}}", AGGSIM_SOURCE_DIR);
  // 2^53 B: 2^30 iterations of the 4-chunk program's loop, 2^28 of NCCL's, 2^32 pieces of a tree half.
  const std::vector<std::pair<std::string, std::string>> cases = {
      {msccl, "runs 1073741824 iterations of the loop of"},
      {"{name: nccl_allreduce}", "more than 1048576 of NCCL's loops"},
      {"{name: nccl_allreduce, movement: chunk, nccl_algorithm: ring}", "more than 1048576 of NCCL's loops"},
      {"{name: double_binary_tree_allreduce}", "more than the 1048576 aggsim pipelines"},
  };
  for (const auto& [algorithm, message] : cases) {
    INFO(algorithm);
    const CliResult r = validate_size(algorithm, fmt::format("{:.0f}", k2to53));
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Catch::Contains("s.yaml:5:15: model.size: 9.01 PB") && Catch::Contains(message));
    // 2^31 B is far inside every bound.
    CHECK(validate_size(algorithm, fmt::format("{:.0f}", k2to31)).exit_code == 0);
  }
  // 2^63 B is no size at all.
  const CliResult r = validate_size("{name: ring_allreduce}", "9223372036854775808");
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains("model.size") && Catch::Contains("below 2^63"));
}
