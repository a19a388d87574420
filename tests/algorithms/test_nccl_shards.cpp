// NCCL's ring reduce-scatter and all-gather math (algorithms/nccl/ring_shards.hpp) against what
// NCCL's kernels do (src/device/reduce_scatter.h, all_gather.h in NCCL 2.21.5): the rank after a
// shard's owner on the ring sends its input first (send), each next rank adds its own as the piece
// passes (recvReduceSend), and the owner adds its own last (recvReduceCopy); all-gather copies.
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <cmath>

#include "algorithms/nccl/nvls_shards.hpp"
#include "algorithms/nccl/ring_shards.hpp"
#include "nccl_fixture.hpp"
#include "support/cli.hpp"
#include "support/csv.hpp"
#include "support/refusal.hpp"

using namespace aggsim;
using namespace aggsim::test;
namespace fs = std::filesystem;


TEST_CASE("NCCL's ring reduce-scatter adds a shard's owner's input last", "[nccl][shards][math]") {
  // 4 members on the ring 0 1 2 3, two elements a shard. In owner r's shard the member after r holds
  // 2^24, the next two hold 1 each, and r holds -2^24. NCCL's order: ((2^24 + 1) + 1) - 2^24, where
  // each + 1 rounds away (2^24 + 1 is a tie, rounded to even 2^24): 0. Started at the owner the sum
  // would be exact (2); the test tells the orders apart.
  const int p = 4;
  const float big = std::ldexp(1.0f, 24);
  std::vector<Eigen::VectorXf> inputs(p, Eigen::VectorXf::Zero(2 * p));
  for (int owner = 0; owner < p; ++owner)
    for (int e = 0; e < 2; ++e) {
      inputs[(owner + 1) % p][2 * owner + e] = big;
      inputs[(owner + 2) % p][2 * owner + e] = 1;
      inputs[(owner + 3) % p][2 * owner + e] = 1;
      inputs[owner][2 * owner + e] = -big;
    }
  const Eigen::VectorXf out =
      nccl_ring_reduce_scatter({{0, 1, 2, 3}}, 1, pointers(inputs), ReduceOp{ReduceKind::sum, 1.0}, p);
  CHECK(out == Eigen::VectorXf::Zero(2 * p));
  // On the reversed ring 3 2 1 0 the member after r is r - 1, which holds 1: ((1 + 1) + 2^24) - 2^24
  // = 2, exact.
  const Eigen::VectorXf reversed =
      nccl_ring_reduce_scatter({{3, 2, 1, 0}}, 1, pointers(inputs), ReduceOp{ReduceKind::sum, 1.0}, p);
  CHECK(reversed == Eigen::VectorXf::Constant(2 * p, 2.0f));
}

TEST_CASE("NCCL's ring reduce-scatter gives each shard the reduction, for every op", "[nccl][shards][math]") {
  // Uneven shards (23 elements on 5 members), two channels of different rings, three loops: every
  // element within n float roundings of the exact reduction (avg: each input scaled by float(1/5) as
  // read, NCCL's PreMulSum), min and max exact.
  const int p = 5;
  std::vector<Eigen::VectorXf> inputs;
  for (int m = 0; m < p; ++m) {
    Eigen::VectorXf x(23);
    for (int i = 0; i < 23; ++i) x[i] = static_cast<float>(std::sin(1.0 + 7.0 * m + 0.3 * i) * (1 + i));
    inputs.push_back(x);
  }
  for (ReduceKind kind : {ReduceKind::sum, ReduceKind::avg, ReduceKind::min, ReduceKind::max}) {
    INFO(reduce_kind_name(kind));
    const Eigen::VectorXf out = nccl_ring_reduce_scatter({{0, 1, 2, 3, 4}, {2, 4, 1, 3, 0}}, 3, pointers(inputs),
                                                         ReduceOp{kind, 1.0}, p);
    check_reduced(out, inputs, kind);
  }
}

TEST_CASE("NCCL's all-gather gives every member each member's own shard", "[nccl][shards][math]") {
  // Member m's vector is m + 1 everywhere: the gathered vector is m + 1 on shard m (7 elements on 3
  // members: shards of 3, 2, 2).
  std::vector<Eigen::VectorXf> inputs;
  for (int m = 0; m < 3; ++m) inputs.push_back(Eigen::VectorXf::Constant(7, static_cast<float>(m + 1)));
  Eigen::VectorXf expected(7);
  expected << 1, 1, 1, 2, 2, 3, 3;
  CHECK(nccl_all_gather(pointers(inputs)) == expected);
  CHECK(nccl_shard(7, 3, 0).count == 3);
  CHECK(nccl_shard(7, 3, 2).begin == 5);
}

TEST_CASE("NVLS reduce-scatter gives each shard the reduction in the switch's order", "[nccl][shards][nvls][math]") {
  const int p = 4;
  std::vector<Eigen::VectorXf> inputs;
  for (int m = 0; m < p; ++m) inputs.push_back(Eigen::VectorXf::LinSpaced(9, 0.5f * m, 3.0f + m));
  const Eigen::VectorXf out = nccl_nvls_reduce_scatter({0, 1, 2, 3}, pointers(inputs), ReduceOp{ReduceKind::sum, 1.0}, p);
  for (int i = 0; i < 9; ++i) {
    const float expected = ((inputs[0][i] + inputs[1][i]) + inputs[2][i]) + inputs[3][i];
    CHECK(out[i] == expected);
  }
  CHECK(nccl_nvls_reduces(ReduceOp{ReduceKind::sum, 1.0}));
  CHECK_FALSE(nccl_nvls_reduces(ReduceOp{ReduceKind::avg, 1.0}));  // NCCL's PreMulSum
  CHECK_FALSE(nccl_nvls_reduces(ReduceOp{ReduceKind::max, 1.0}));  // fp32: sum only
}

namespace {

std::string gather_scatter(const std::string& platform, int ranks, const std::string& collective,
                           const std::string& op, const std::string& size, const std::string& extra = "") {
  return fmt::format(
      "name: gs\nranks: {}\nsteps: 1\nplatform: {}\nmodel: {{size: {}, math: off}}\n"
      "algorithm: {{name: nccl_allreduce, gpu: hopper, collective: {}, op: {}{}}}\ncompute: {{reduce_speed: 0}}\n",
      ranks, platform, size, collective, op, extra);
}

}  // namespace

TEST_CASE("NCCL's choice for reduce-scatter and all-gather: ring, or NVLS inside one node", "[nccl][shards][nvls][tuning]") {
  // NCCL 2.21.5's rules (src/graph/tuning.cc, src/enqueue.cc): reduce-scatter and all-gather run by
  // ring (any protocol) or NVLS (Simple), NVLS on one node only and, for a reduce-scatter of fp32,
  // with op sum only; the least estimated time wins.
  const auto dir = fresh_dir("gs-choice");
  // One H100 node: the ring's bus bandwidth (450 GB/s) counts n/(n-1) = 8/7 towards a reduce-scatter
  // (514 GB/s), NVLS's 8 heads x 40 GB/s x 5/6 = 267: the ring at every size (LL while latency
  // rules: 6.6 + 7 x 0.6 us against NVLS's 25).
  CHECK(nccl_call_of(dir, gather_scatter(kH100Node, 8, "reduce_scatter", "sum", "64KiB")).first == "ring/ll");
  CHECK(nccl_call_of(dir, gather_scatter(kH100Node, 8, "reduce_scatter", "sum", "1GiB")).first == "ring/simple");
  CHECK(nccl_call_of(dir, gather_scatter(kH100Node, 8, "all_gather", "sum", "1GiB")).first == "ring/simple");
  // 72 GPUs: a ring of 71 hops (LL: 6.6 + 71 x 0.6 = 49.2 us before any byte) against NVLS's 25 us and
  // 32 heads x 20 GB/s x 5/6 = 533 GB/s: NVLS at 1 MiB for an all-gather and a summing
  // reduce-scatter, but not for avg (NCCL's PreMulSum, which the switch does not do).
  CHECK(nccl_call_of(dir, gather_scatter(kDomain72, 72, "all_gather", "avg", "1MiB")).first == "nvls/simple");
  CHECK(nccl_call_of(dir, gather_scatter(kDomain72, 72, "reduce_scatter", "sum", "1MiB")).first == "nvls/simple");
  CHECK(nccl_call_of(dir, gather_scatter(kDomain72, 72, "reduce_scatter", "avg", "1MiB")).first.rfind("ring/", 0) == 0);
  // Two H100 nodes: NVLS reduce-scatter and all-gather stay inside one node, so the ring.
  CHECK(nccl_call_of(dir, gather_scatter(kH100TwoNodes, 16, "all_gather", "sum", "1MiB")).first.rfind("ring/", 0) == 0);
  fs::remove_all(dir);
}

TEST_CASE("NVLS reduce-scatter and all-gather move a GPU's whole buffer through its port once", "[nccl][shards][nvls]") {
  // 1 GiB on 72 GPUs at 900 GB/s a port and NVLS's share of it (0.85 x 20.6 / 25 on Hopper): the
  // reduce-scatter's port sends the buffer once, the all-gather's receives it once; the fill and
  // latencies add well under 5 %.
  const auto dir = fresh_dir("gs-nvls-time");
  const double expected = double(1ull << 30) / (900e9 * kHopperNvlsEfficiency);
  for (const std::string collective : {"reduce_scatter", "all_gather"}) {
    INFO(collective);
    const auto [choice, time] =
        nccl_call_of(dir, gather_scatter(kDomain72, 72, collective, "sum", "1GiB", ", nccl_algorithm: nvls"));
    CHECK(choice == "nvls/simple");
    CHECK(time == Approx(expected).epsilon(0.05));
  }
  check_refused(gather_scatter(kDomain72, 72, "reduce_scatter", "avg", "1MiB", ", nccl_algorithm: nvls"),
                {"algorithm.nccl_algorithm", "sum only"});
  check_refused(gather_scatter(kH100Node, 8, "all_gather", "sum", "1MiB", ", nccl_algorithm: tree"),
                {"algorithm.nccl_algorithm", "pat (one GPU per node) or, inside one node, nvls"});
  fs::remove_all(dir);
}

TEST_CASE("aggsim perf --collective reduce_scatter and all_gather report NCCL's choice and the run's time",
          "[nccl][shards][perf]") {
  // perf's point is the run of one call (nccl-tests' sum for a reduce-scatter): the same choice and
  // time as the run's collectives.csv, busbw = algbw x (p-1)/p.
  const auto dir = fresh_dir("gs-perf");
  for (const std::string collective : {"reduce_scatter", "all_gather"}) {
    INFO(collective);
    // 1,179,648 B: a whole float count per rank (4096 x 72 x 4 B), as perf's sizes are.
    const std::string yaml = gather_scatter(kDomain72, 72, "all_reduce", "avg", "1179648B");
    write_file(dir / "p.yaml", yaml);
    const auto r = run_aggsim({"perf", "p.yaml", "--collective", collective, "--min", "1179648B", "--max", "1179648B",
                               "--csv", "p.csv"},
                              dir);
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    const auto rows = read_csv_rows(read_file(dir / "p.csv"));
    REQUIRE(rows.size() == 1);
    const auto [choice, time] = nccl_call_of(dir, gather_scatter(kDomain72, 72, collective, "sum", "1179648B"));
    CHECK(choice == "nvls/simple");
    CHECK(rows[0].at("choice").find("nvls") != std::string::npos);
    CHECK(std::stod(rows[0].at("time_s")) == Approx(time).epsilon(1e-9));
    CHECK(std::stod(rows[0].at("busbw_GBps")) == Approx(std::stod(rows[0].at("algbw_GBps")) * 71 / 72).epsilon(1e-5));
  }
  fs::remove_all(dir);
}

TEST_CASE("A 16-bit reduce-scatter rounds every partial result as NCCL's kernels hold it", "[nccl][shards][math]") {
  // bf16 keeps 8 significant bits: 1 + 2^-8 is a tie between 1 and 1 + 2^-7 and rounds to even, 1.
  // Owner r's shard: the member after r holds 1, the next two 2^-8 each, r holds 0. In bf16 NCCL's
  // order gives ((1 + 2^-8) + 2^-8) + 0 = 1 (each step rounded); fp32 keeps 1 + 2^-7. fp16 (11
  // significant bits) keeps it too, and rounds 1 + 2^-12 to 1.
  const int p = 4;
  const float tiny = std::ldexp(1.0f, -8);
  std::vector<Eigen::VectorXf> inputs(p, Eigen::VectorXf::Zero(p));
  for (int owner = 0; owner < p; ++owner) {
    inputs[(owner + 1) % p][owner] = 1;
    inputs[(owner + 2) % p][owner] = tiny;
    inputs[(owner + 3) % p][owner] = tiny;
  }
  const ReduceOp sum{ReduceKind::sum, 1.0};
  CHECK(nccl_ring_reduce_scatter({{0, 1, 2, 3}}, 1, pointers(inputs), sum, p, WireDtype::bf16) ==
        Eigen::VectorXf::Ones(p));
  CHECK(nccl_ring_reduce_scatter({{0, 1, 2, 3}}, 1, pointers(inputs), sum, p, WireDtype::fp16) ==
        Eigen::VectorXf::Constant(p, 1 + 2 * tiny));
  CHECK(nccl_ring_reduce_scatter({{0, 1, 2, 3}}, 1, pointers(inputs), sum, p) ==
        Eigen::VectorXf::Constant(p, 1 + 2 * tiny));
  Eigen::VectorXf v(2);
  v << 1 + std::ldexp(1.0f, -12), 1 + std::ldexp(1.0f, -10);
  round_to(v, WireDtype::fp16);
  CHECK(v[0] == 1.0f);
  CHECK(v[1] == 1 + std::ldexp(1.0f, -10));
  // An all-gather in bf16 hands out bf16 values.
  std::vector<Eigen::VectorXf> params(2, Eigen::VectorXf::Constant(2, 1 + std::ldexp(1.0f, -9)));
  CHECK(nccl_all_gather(pointers(params), WireDtype::bf16) == Eigen::VectorXf::Ones(2));
}
