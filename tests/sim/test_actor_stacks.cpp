// Runs with more SimGrid actors than stacks with guard pages fit in the process's memory mappings
// (two mappings each, 65,530 by default) run without guard pages instead of aborting ("Failed to
// protect stack", exit 134); runs whose actors would not fit in memory at all are refused at
// `ranks`, by validate as by run (sim/engine/actor_stacks.hpp).
#include <fmt/format.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "support/cli.hpp"

using namespace aggsim::test;
namespace fs = std::filesystem;

namespace {

const std::string kSource = AGGSIM_SOURCE_DIR;

// validate, then run: both succeed and the run writes its summary.
void check_runs(const fs::path& dir) {
  const CliResult v = run_aggsim({"validate", "s.yaml"}, dir);
  INFO(v.err);
  CHECK(v.exit_code == 0);
  const CliResult r = run_aggsim({"run", "s.yaml", "--out", "out", "-q"}, dir);
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(fs::exists(dir / "out" / "summary.json"));
}

}  // namespace

TEST_CASE("an MSCCL program of 32 GPUs x 1,024 threadblocks runs its 32,768 actors without guard pages",
          "[actors][msccl]") {
  const auto dir = fresh_dir("actors-msccl");
  REQUIRE(std::system(("/usr/bin/python3 " + kSource +
                       "/algorithms/msccl/programs/generate.py ring_allreduce --gpus 32 --out " +
                       (dir / "ring.xml").string())
                          .c_str()) == 0);
  // Each GPU's ring threadblock gets 1,023 idle ones (a nop each).
  std::string text = read_file(dir / "ring.xml"), idle;
  for (int t = 1; t < 1024; ++t)
    idle += fmt::format(
        "    <tb id=\"{}\" send=\"-1\" recv=\"-1\" chan=\"0\">\n      <step s=\"0\" type=\"nop\" "
        "srcbuf=\"i\" "
        "srcoff=\"-1\" dstbuf=\"i\" dstoff=\"-1\" cnt=\"0\" depid=\"-1\" deps=\"-1\" hasdep=\"0\"/>\n    "
        "</tb>\n",
        t);
  for (std::size_t at = text.find("</tb>\n"); at != std::string::npos;
       at = text.find("</tb>\n", at + 6 + idle.size()))
    text.insert(at + 6, idle);
  write_file(dir / "idle.xml", text);
  write_file(
      dir / "s.yaml",
      "name: a\nranks: 32\nsteps: 1\nplatform: {topology: cluster, hosts: 32}\nmodel: {size: 1MiB, math: "
      "off}\nalgorithm: {name: msccl, program: idle.xml}\n");
  check_runs(dir);
  fs::remove_all(dir);
}

TEST_CASE("NCCL's chunk-level tree on 1,024 ranks of 8 channels runs its 43,008 actors without guard pages",
          "[actors][nccl]") {
  const auto dir = fresh_dir("actors-nccl");
  write_file(dir / "s.yaml",
             "name: a\nranks: 1024\nsteps: 1\nplatform: {topology: cluster, nodes: 128, gpus_per_node: 8}\n"
             "model: {size: 64KiB, math: off}\n"
             "algorithm: {name: nccl_allreduce, movement: chunk, nccl_algorithm: tree, channels: 8}\n");
  check_runs(dir);
  fs::remove_all(dir);
}

TEST_CASE("actors that would take more than half the machine's memory are refused at ranks", "[actors]") {
  // NCCL's chunk-level movement on 32 channels: 2 + 5 x 32 actors per rank of about 20 KiB each.
  const double half =
      static_cast<double>(::sysconf(_SC_PHYS_PAGES)) * static_cast<double>(::sysconf(_SC_PAGE_SIZE)) / 2;
  const long ranks = static_cast<long>(std::ceil(half / (162 * 20480.0))) + 1;
  INFO(ranks);
  const auto dir = fresh_dir("actors-memory");
  write_file(dir / "s.yaml",
             fmt::format("name: a\nranks: {}\nsteps: 1\nplatform: {{topology: cluster, hosts: {}}}\n"
                         "model: {{size: 64KiB, math: off}}\n"
                         "algorithm: {{name: nccl_allreduce, movement: chunk, channels: 32}}\n",
                         ranks, ranks));
  for (const std::vector<std::string>& args : {std::vector<std::string>{"validate", "s.yaml"},
                                              std::vector<std::string>{"run", "s.yaml", "--out", "out"}}) {
    const CliResult r = run_aggsim(args, dir);
    INFO(r.err);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err,
               Catch::Contains(fmt::format("s.yaml:2:8: ranks: {} ranks run up to {} SimGrid actors at once "
                                           "(2 per rank and {} of channels",
                                           ranks, ranks * 162, ranks * 160)));
    CHECK_FALSE(fs::exists(dir / "out"));
  }
  fs::remove_all(dir);
}
