// Every reader and planner bounds its work by its input and refuses beyond a documented limit, in
// well under 1 GB of memory (each refusal here runs under a 1 GB address-space limit): MSCCL chunks x
// GPUs, YAML values and layer rows, hosts generated per rank, sweep points (counted with overflow
// checks), perf sizes, measurement rows and the simulations compare runs.
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "support/cli.hpp"

using namespace aggsim::test;
namespace fs = std::filesystem;

namespace {

constexpr long kOneGiB = 1L << 20;  // KiB
const std::string kSource = AGGSIM_SOURCE_DIR;

// Refused with exit status 2 and every fragment on stderr, within 1 GB.
void check_refused_within_1gb(const std::vector<std::string>& args, const fs::path& dir,
                              const std::vector<std::string>& fragments) {
  const CliResult r = run_aggsim(args, dir, kOneGiB);
  INFO(args.front() << ": " << r.err);
  CHECK(r.exit_code == 2);
  for (const auto& f : fragments) CHECK_THAT(r.err, Catch::Contains(f));
}

void write_scenario(const fs::path& file, const std::string& model, int ranks = 2,
                    const std::string& platform = "") {
  write_file(
      file,
      fmt::format(
          "name: b\nranks: {}\nsteps: 1\nplatform: {}\nmodel: {}\nalgorithm: {{name: ring_allreduce}}\n",
          ranks, platform.empty() ? fmt::format("{{topology: cluster, hosts: {}}}", ranks) : platform,
          model));
}

}  // namespace

TEST_CASE("an MSCCL program declaring more than 2^22 chunks over its GPUs is refused at once",
          "[input][bounds]") {
  // 512 GPUs x 32,768 chunks in 28 KB took 2.4 GB to refuse.
  const auto dir = fresh_dir("bounds-msccl");
  write_file(dir / "s.yaml",
             fmt::format("name: b\nranks: 512\nsteps: 1\nplatform: {{topology: cluster, hosts: 512}}\n"
                         "model: {{size: 1MiB, math: off}}\nalgorithm: {{name: msccl, program: "
                         "{}/tests/fuzz/regressions/msccl_program/declares-512-gpus-of-32768-chunks.xml}}\n",
                         kSource));
  check_refused_within_1gb(
      {"validate", "s.yaml"}, dir,
      {"declares-512-gpus-of-32768-chunks.xml:1: algo.nchunksperloop: 32768 chunks on each of "
       "512 GPUs: more than the 4194304 chunks aggsim reads"});
  fs::remove_all(dir);
}

TEST_CASE("a YAML file of more than 2^20 values, or a layer table of more than 65,536 layers, is refused",
          "[input][bounds]") {
  const auto dir = fresh_dir("bounds-layers");
  // 200,000 rows of 9 values each: refused while counting, before any is parsed (10^6 rows took 21 s
  // and 4.2 GB to validate).
  {
    std::ofstream out(dir / "huge.yaml");
    out << "name: huge\nlayers:\n";
    for (int i = 0; i < 200000; ++i) out << "  - {name: l" << i << ", shape: [10, 10], forward_flops: 100}\n";
  }
  write_scenario(dir / "s.yaml", "{layers: huge.yaml, math: off}");
  check_refused_within_1gb({"validate", "s.yaml"}, dir,
                           {"huge.yaml:116511: more than 1048576 keys, items and values by this line"});
  // 65,537 short rows fit the YAML bound: the table's own bound refuses them.
  {
    std::ofstream out(dir / "long.yaml");
    out << "name: long\nlayers:\n";
    for (int i = 0; i < 65537; ++i) out << "  - {name: l" << i << ", shape: [1, 1], forward_flops: 1}\n";
  }
  write_scenario(dir / "s.yaml", "{layers: long.yaml, math: off}");
  check_refused_within_1gb({"validate", "s.yaml"}, dir,
                           {"long.yaml:3:3: layers: 65537 layers: aggsim reads at most 65536"});
  fs::remove_all(dir);
}

TEST_CASE("a generated platform holds at most 16 hosts per rank, or 65,536 in all", "[input][bounds]") {
  // 4,194,304 nodes for 8 ranks passed 3 GB while SimGrid built hosts nobody used.
  const auto dir = fresh_dir("bounds-hosts");
  write_scenario(dir / "s.yaml", "{size: 1MiB, math: off}", 8, "{topology: cluster, nodes: 4194304}");
  check_refused_within_1gb({"validate", "s.yaml"}, dir,
                           {"s.yaml:4:38: platform.nodes: the platform has 4194304 hosts for 8 ranks: aggsim "
                            "generates at most 16 hosts per rank (or 65536 in all, whatever the ranks)"});
  write_scenario(dir / "s.yaml", "{size: 1MiB, math: off}", 8, "{topology: cluster, hosts: 65537}");
  check_refused_within_1gb({"validate", "s.yaml"}, dir,
                           {"platform.hosts: the platform has 65537 hosts for 8 ranks"});
  fs::remove_all(dir);
}

TEST_CASE("a sweep's points are counted with overflow checks and refused beyond 100,000 before expanding",
          "[input][bounds][sweep]") {
  const auto dir = fresh_dir("bounds-sweep");
  // 8 keys x 256 values: 2^64 points wrapped to "0 points" and exited 0.
  std::string values = "[";
  for (int i = 0; i < 256; ++i) values += fmt::format("{}{}", i ? ", " : "", i + 1);
  values += "]";
  std::string grid;
  for (const char* key : {"seed", "steps", "model.proxy_dim", "compute.reduce_speed", "ranks",
                          "platform.hosts", "algorithm.bucket", "compute.flops_per_param"})
    grid += fmt::format("    {}: {}\n", key, values);
  write_file(
      dir / "w.yaml",
      "name: w\nranks: 2\nmodel: {size: 1MiB}\nalgorithm: {name: ring_allreduce}\nsweep:\n  grid:\n" + grid);
  check_refused_within_1gb(
      {"sweep", "expand", "w.yaml"}, dir,
      {"w.yaml: the sweep has 2^64 or more points (256 x 256 x 256 x 256 x 256 x 256 x 256 x "
       "256), more than the 100000 aggsim expands in one sweep"});
  // 400 x 500 = 200,000 points were expanded one by one; --grid axes count too.
  check_refused_within_1gb({"sweep", "expand", kSource + "/scenarios/default.yaml", "--grid",
                            "model.proxy_dim=" + std::string(values.substr(1, values.size() - 2)), "--grid",
                            "steps=" + std::string(values.substr(1, values.size() - 2)), "--repeat", "2"},
                           dir, {"the sweep has 131072 points (256 x 256 x 2 repetitions)"});
  fs::remove_all(dir);
}

TEST_CASE("perf plans at most 1,024 sizes, counting --factor's steps first", "[input][bounds][perf]") {
  const auto dir = fresh_dir("bounds-perf");
  // --factor 1.0000001 planned every size first and reached 18 GB in 30 s.
  check_refused_within_1gb(
      {"perf", "default", "--factor", "1.0000001"}, dir,
      {"--factor: 1.0000001 takes 2.08e+08 steps from 8 to 8589934592 B; aggsim perf takes at "
       "most 16777216"});
  check_refused_within_1gb(
      {"perf", "default", "--min", "8", "--max", "8TiB", "--factor", "1.01"}, dir,
      {"--min, --max, --factor: more than 1024 sizes from 8 to 8796093022208 B by 1.01"});
  fs::remove_all(dir);
}

TEST_CASE(
    "measurement files hold at most 100,000 rows, and compare simulates each distinct point once, at "
    "most 10,000",
    "[input][bounds][calibrate]") {
  const auto dir = fresh_dir("bounds-rows");
  const std::string scenario = kSource + "/tests/data/calibration/roce_h100.yaml";
  const auto csv = [&](const std::string& name, int rows, bool distinct) {
    std::ofstream out(dir / name);
    out << "collective,ranks,nodes,bytes,time\n";
    for (int i = 0; i < rows; ++i)
      out << "all_reduce,2,2," << (distinct ? 1024 + 4 * i : 1048576) << ",0.001\n";
  };
  csv("many.csv", 100001, false);
  check_refused_within_1gb({"compare", scenario, "many.csv"}, dir,
                           {"many.csv:100002: more than 100000 measurement rows in one file"});
  csv("distinct.csv", 10001, true);
  check_refused_within_1gb({"compare", scenario, "distinct.csv"}, dir,
                           {"the measurements ask for 10001 distinct simulations, more than the 10000"});
  // 20,000 rows of one point are one simulation (100,000 ran past their time limit, one by one).
  csv("same.csv", 20000, false);
  const CliResult r = run_aggsim({"compare", scenario, "same.csv", "--csv", "c.csv"}, dir, kOneGiB);
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("over 20000 points"));
  fs::remove_all(dir);
}
