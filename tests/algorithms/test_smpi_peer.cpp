// Peer check: aggsim's all-reduce algorithms against SimGrid's own MPI collectives. The same
// platform XML (64 hosts on one switch, a private 10 Gb/s, 1 us full-duplex link each) and the
// same network model (LV08, aggsim's default; smpirun would otherwise use its size-dependent `SMPI`
// model) run tests/algorithms/smpi/allreduce_time.cpp under smpirun with SMPI's algorithm of the
// same schedule, timing only on both sides (aggsim: math off; SMPI: no computation benchmarking,
// free MPI_Wtime, a no-op reduction operator, shared buffers; SMPI's send/receive overheads
// smpi/os, smpi/or, smpi/ois are 0 by default). Every rank starts at simulated time 0 on both sides
// and the time is the last rank's end. Sizes are 1 MiB and 16 MiB so that the element count
// divides by p: SMPI's `lr` reduces a remainder of count % p elements with a second all-reduce
// (a reduce + broadcast tree for that tiny vector, +3.8 % at p = 64 for 10^6 bytes), which aggsim's
// ring spreads over its chunks instead.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <catch2/catch.hpp>

#include "support/cli.hpp"
#include "support/reduction_check.hpp"

using namespace aggsim;
using namespace aggsim::test;

namespace {

constexpr int kHosts = 64;

struct Bench {
  std::filesystem::path dir = fresh_dir("smpi-peer");
  std::filesystem::path platform = dir / "cluster_64.xml";
  std::filesystem::path hostfile = dir / "hosts";
  Bench() {
    write_file(platform, fmt::format(R"(<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1">
  <cluster id="peer" prefix="host-" radical="0-{}" suffix="" speed="100Gf" bw="10Gbps" lat="1us"
           sharing_policy="SPLITDUPLEX"/>
</platform>
)",
                                     kHosts - 1));
    std::string hosts;
    for (int i = 0; i < kHosts; ++i) hosts += fmt::format("host-{}\n", i);
    write_file(hostfile, hosts);  // rank r on host-r, as aggsim maps ranks
  }
};

const Bench& bench() {
  static const Bench b;
  return b;
}

double aggsim_time(const std::string& algorithm, int p, long bytes) {
  const std::string yaml = fmt::format(R"(
ranks: {}
steps: 1
platform: {{file: {}}}
network: lv08
model: {{size: {}B, math: off}}
algorithm: {{name: {}, op: sum}}
compute: {{reduce_speed: 0}}
)",
                                       p, bench().platform.string(), bytes, algorithm);
  return step_times(yaml).at(0);
}

#ifdef AGGSIM_SMPI_ALLREDUCE
double smpi_time(const std::vector<std::string>& cfgs, int p, long bytes) {
  std::string cmd = std::string(AGGSIM_SMPIRUN) + fmt::format(" -np {} -platform {} -hostfile {}", p,
                                                              shell_quote(bench().platform.string()),
                                                              shell_quote(bench().hostfile.string()));
  for (const std::string c :
       {"network/model:LV08", "smpi/simulate-computation:no", "smpi/wtime:0", "smpi/shared-malloc:local"})
    cmd += " --cfg=" + c;
  for (const auto& c : cfgs) cmd += " --cfg=" + c;
  cmd += " --log=root.thres:error " + std::string(AGGSIM_SMPI_ALLREDUCE) + " " + std::to_string(bytes);
  const auto out = bench().dir / "smpi.out";
  cmd += " >" + shell_quote(out.string()) + " 2>&1";
  const int status = std::system(cmd.c_str());
  const std::string text = read_file(out);
  if (status != 0) throw std::runtime_error("smpirun failed: " + cmd + "\n" + text);
  // The program's one line is the last one.
  const auto last = text.find_last_of('\n', text.size() - 2);
  return std::stod(text.substr(last == std::string::npos ? 0 : last + 1));
}
#endif

// SMPI's time is within `tolerance` of aggsim's, for each p in {8, 64} and each size.
void check_peer(const std::string& algorithm, const std::vector<std::string>& smpi_cfg, double tolerance,
                const std::vector<long>& sizes = {1L << 20, 16L << 20}) {
#ifdef AGGSIM_SMPI_ALLREDUCE
  for (int p : {8, 64}) {
    for (long bytes : sizes) {
      const double ours = aggsim_time(algorithm, p, bytes), theirs = smpi_time(smpi_cfg, p, bytes);
      // One short line per case (`-s` prints it): the measured agreement quoted in the README.
      INFO(fmt::format("{} | {} | p={} | {} B | gap {:+.4f} %", algorithm, fmt::join(smpi_cfg, " "), p, bytes,
                       100 * (theirs - ours) / ours));
      CHECK(std::abs(theirs - ours) <= tolerance * ours);
    }
  }
#else
  (void)algorithm, (void)smpi_cfg, (void)tolerance, (void)sizes;
  // ctest reports this test as skipped, not passed (SKIP_REGULAR_EXPRESSION in tests/CMakeLists.txt).
  WARN("SKIPPED: smpicxx/smpirun not found at configure time (Debian package simgrid): no SMPI peer check");
#endif
}

}  // namespace

TEST_CASE("ring all-reduce agrees with SMPI's lr within 1 %", "[smpi][peer]") {
  check_peer("ring_allreduce", {"smpi/allreduce:lr"}, 0.01);
}

TEST_CASE("halving-doubling all-reduce agrees with SMPI's rab_rdb within 1 %", "[smpi][peer]") {
  check_peer("halving_doubling_allreduce", {"smpi/allreduce:rab_rdb"}, 0.01);
}

// rab1 halves exactly as we do, then calls SMPI's default all-gather, which posts its p-1
// transfers at once (one latency instead of log2 p rounds): SMPI is faster by up to 6.2 % at
// 1 MiB, p = 64 (13.01 x 2 us of LV08 latency per saved round), and by 0.45 % at 16 MiB. With the
// all-gather forced to recursive doubling (`smpi/allgather:rdb`) the schedules coincide: 1 %.
// (The explained gap is checked at 1 MiB only, where it is largest.) The large size is 16 MiB:
// SMPI copies every byte through internal buffers of its own, and at 64 ranks and 64 MiB that
// alone took 10 s of system time per run.
TEST_CASE("halving-doubling all-reduce agrees with SMPI's rab1 once its all-gather is recursive doubling",
          "[smpi][peer]") {
  check_peer("halving_doubling_allreduce", {"smpi/allreduce:rab1", "smpi/allgather:rdb"}, 0.01);
  check_peer("halving_doubling_allreduce", {"smpi/allreduce:rab1"}, 0.07, {1L << 20});
}

// rab2 reduce-scatters with an all-to-all (every rank sends its p-1 pieces at once) instead of
// log2 p halving rounds, then all-gathers: fewer latency rounds at 1 MiB (SMPI 6 % faster at
// p = 8, 12.3 % at p = 64), and at 16 MiB the p-1 concurrent flows per host share its link under
// LV08's reverse-traffic term (SMPI 4.7 % slower at p = 64). A different algorithm, not a bug.
TEST_CASE("halving-doubling all-reduce and SMPI's rab2 differ by rab2's all-to-all", "[smpi][peer]") {
  check_peer("halving_doubling_allreduce", {"smpi/allreduce:rab2"}, 0.13, {1L << 20});
}

TEST_CASE("recursive doubling all-reduce agrees with SMPI's rdb within 1 %", "[smpi][peer]") {
  check_peer("recursive_doubling_allreduce", {"smpi/allreduce:rdb"}, 0.01);
}

TEST_CASE("tree all-reduce agrees with SMPI's redbcast (binomial reduce and broadcast) within 1 %",
          "[smpi][peer]") {
  check_peer("tree_allreduce",
             {"smpi/allreduce:redbcast", "smpi/reduce:binomial", "smpi/bcast:binomial_tree"}, 0.01);
}
