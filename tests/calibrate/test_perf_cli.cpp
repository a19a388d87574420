// `aggsim perf`: nccl-tests' table for the simulated cluster, checked against the closed-form cost
// of a ring all-reduce and all-gather on an alpha-beta node, nccl-tests' count and busbw
// conventions, and bad options.
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <sstream>

#include "support/cli.hpp"
#include "support/csv.hpp"

using namespace aggsim::test;
namespace fs = std::filesystem;

namespace {

// One node of 8 GPUs, each with a private 100 GB/s, 1 us link to the node's switch.
const char* kScenario = R"(name: perf
ranks: 8
platform: {topology: cluster, nodes: 1, gpus_per_node: 8, intra_bandwidth: 100GBps, intra_latency: 1us}
network: alpha_beta
model: {size: 1MB, math: off}
algorithm: {name: ring_allreduce}
compute: {reduce_speed: 0}
)";

constexpr double kAlpha = 2e-6, kBeta = 100e9;  // a message crosses two GPU links

}  // namespace

TEST_CASE("aggsim perf prints nccl-tests' table with the ring's closed-form times", "[perf][cli]") {
  const auto dir = fresh_dir("perf");
  write_file(dir / "s.yaml", kScenario);
  auto r = run_aggsim(
      {"perf", "s.yaml", "--min", "1KiB", "--max", "1MiB", "--factor", "4", "--csv", "out/p.csv", "-j", "2"},
      dir);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("out-of-place") != std::string::npos);
  CHECK(r.out.find("# Avg bus bandwidth") != std::string::npos);
  const auto rows = read_csv_rows(read_file(dir / "out" / "p.csv"));
  REQUIRE(rows.size() == 6);
  const int p = 8;
  double bytes = 1024;
  for (const auto& row : rows) {
    INFO(bytes);
    CHECK(row.at("collective") == "all_reduce");
    CHECK(std::stod(row.at("bytes")) == bytes);
    CHECK(std::stod(row.at("count")) == bytes / 4);
    const double t = 2.0 * (p - 1) * (kAlpha + bytes / p / kBeta);
    CHECK(std::stod(row.at("time_s")) == Approx(t).epsilon(1e-6));
    CHECK(std::stod(row.at("busbw_GBps")) == Approx(bytes / t / 1e9 * 2.0 * (p - 1) / p).epsilon(1e-4));
    // The text table's row holds the same size, count and time in microseconds.
    CHECK(r.out.find(fmt::format(" {:>11} {:>12}", static_cast<long>(bytes), static_cast<long>(bytes / 4))) !=
          std::string::npos);
    bytes *= 4;
  }
}

TEST_CASE("aggsim perf all_gather counts elements per rank and rounds sizes as nccl-tests", "[perf][cli]") {
  const auto dir = fresh_dir("perf");
  write_file(dir / "s.yaml", kScenario);
  auto r = run_aggsim({"perf", "s.yaml", "--collective", "all_gather", "--min", "100B", "--max", "1000B",
                       "--factor", "3", "--csv", "p.csv", "-j", "2"},
                      dir);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto rows = read_csv_rows(read_file(dir / "p.csv"));
  // 100, 300, 900 B rounded down to whole floats per rank of 8 (32 B): 96, 288, 896.
  REQUIRE(rows.size() == 3);
  const std::vector<double> expect = {96, 288, 896};
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const double S = expect[i];
    CHECK(std::stod(rows[i].at("bytes")) == S);
    CHECK(std::stod(rows[i].at("count")) == S / 4 / 8);
    // Ring all-gather: p-1 steps of one rank's S/p bytes.
    CHECK(std::stod(rows[i].at("time_s")) == Approx(7 * (kAlpha + S / 8 / kBeta)).epsilon(1e-6));
  }
}

TEST_CASE("aggsim perf: nccl_allreduce's broadcast streams at the link's bandwidth on large sizes",
          "[perf][cli][nccl]") {
  const auto dir = fresh_dir("perf");
  write_file(dir / "s.yaml", kScenario);
  auto r = run_aggsim({"perf", "s.yaml", "--set", "algorithm={name: nccl_allreduce, protocol: simple}",
                       "--collective", "broadcast", "--min", "512MiB", "--max", "512MiB", "--csv", "p.csv"},
                      dir);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto rows = read_csv_rows(read_file(dir / "p.csv"));
  REQUIRE(rows.size() == 1);
  // A pipelined broadcast moves every byte over each GPU's link once: busbw (= algbw) -> 100 GB/s.
  CHECK(std::stod(rows[0].at("busbw_GBps")) == Approx(100).epsilon(0.05));
}

TEST_CASE("aggsim perf times an MSCCL program: the shipped ring within 15% of the ring's closed form",
          "[perf][cli][msccl]") {
  const auto dir = fresh_dir("perf");
  write_file(dir / "s.yaml", kScenario);
  auto r = run_aggsim({"perf", "s.yaml", "--set", "algorithm={name: msccl, program: ring_allreduce_8}",
                       "--min", "16MiB", "--max", "64MiB", "--factor", "4", "--csv", "p.csv"},
                      dir);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto rows = read_csv_rows(read_file(dir / "p.csv"));
  REQUIRE(rows.size() == 2);
  for (const auto& row : rows) {
    const double S = std::stod(row.at("bytes"));
    INFO(S);
    CHECK(row.at("collective") == "all_reduce");
    const double ring = 2.0 * 7 * (kAlpha + S / 8 / kBeta);
    CHECK(std::abs(std::stod(row.at("time_s")) / ring - 1) < 0.15);
  }
  // A rank count the program was not written for is refused, naming the program's GPUs.
  auto wrong = run_aggsim({"perf", "s.yaml", "--set", "algorithm={name: msccl, program: ring_allreduce_8}",
                           "--set", "ranks=4", "--min", "1MiB", "--max", "1MiB"},
                          dir);
  CHECK(wrong.exit_code == 2);
  CHECK_THAT(wrong.err, Catch::Contains("8"));
}

TEST_CASE("aggsim perf refuses bad options, naming them", "[perf][cli]") {
  const auto dir = fresh_dir("perf");
  write_file(dir / "s.yaml", kScenario);
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--factor", "1"}, "--factor"}, {{"--collective", "alltoall"}, "--collective"},
      {{"--min", "0B"}, "--min"},      {{"--min", "2MiB", "--max", "1MiB"}, "--min"},
      {{"--max", "lots"}, "--max"},    {{"--collective", "broadcast"}, "broadcast"},
  };
  for (const auto& [args, named] : cases) {
    std::vector<std::string> cmd = {"perf", "s.yaml"};
    cmd.insert(cmd.end(), args.begin(), args.end());
    const auto r = run_aggsim(cmd, dir);
    INFO(args.front() << " " << args.back() << ": " << r.err);
    CHECK(r.exit_code == 2);
    CHECK(r.err.rfind("aggsim: error: ", 0) == 0);
    CHECK(r.err.find(named) != std::string::npos);
  }
}

TEST_CASE("aggsim perf finds a shipped scenario by its bare name from any folder, as run does",
          "[perf][cli]") {
  const auto dir = fresh_dir("perf-name");
  auto r = run_aggsim({"perf", "default", "--set", "ranks=4", "--min", "1KiB", "--max", "1KiB", "--csv", "p.csv"},
                      dir);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(read_csv_rows(read_file(dir / "p.csv")).size() == 1);
  // A name found nowhere is refused with where it looked, as by run.
  r = run_aggsim({"perf", "defualt"}, dir);
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("defualt: scenario file not found (looked for ") != std::string::npos);
  CHECK(r.err == run_aggsim({"run", "defualt"}, dir).err);
  fs::remove_all(dir);
}

TEST_CASE("aggsim perf --csv is checked before any simulation and replaces only a regular file",
          "[perf][cli]") {
  const auto dir = fresh_dir("perf-csv");
  write_file(dir / "s.yaml", kScenario);
  write_file(dir / "kept.txt", "the user's\n");
  fs::create_symlink("kept.txt", dir / "link.csv");
  fs::create_directory(dir / "folder.csv");
  for (const char* csv : {"link.csv", "folder.csv", "s.yaml"}) {
    const auto r = run_aggsim({"perf", "s.yaml", "--min", "1KiB", "--max", "1KiB", "--csv", csv}, dir);
    INFO(csv << ": " << r.err);
    CHECK(r.exit_code == 2);
    CHECK(r.err.rfind(std::string("aggsim: error: --csv: "), 0) == 0);
    CHECK(r.out.empty());  // refused before the table
  }
  CHECK(read_file(dir / "kept.txt") == "the user's\n");
  CHECK(read_file(dir / "s.yaml") == kScenario);
  std::size_t entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++entries;
  CHECK(entries == 4);  // no temporary left behind
  fs::remove_all(dir);
}
