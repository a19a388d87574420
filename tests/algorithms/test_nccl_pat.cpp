// NCCL's PAT reduce-scatter and all-gather (algorithms/nccl/pat_schedule.hpp) against NCCL 2.23.4:
// the steps its PatRSAlgorithm::getNextOp walks (src/include/collectives.h, compiled for the host
// and run for rank 0), the sums they imply, the tuning rules of src/graph/tuning.cc and
// src/enqueue.cc, and NCCL's all-reduce choice honouring ncclNvlsSupported.
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <sstream>

#include "algorithms/nccl/nvls_shards.hpp"
#include "algorithms/nccl/pat_schedule.hpp"
#include "algorithms/nccl/ring_shards.hpp"
#include "nccl_fixture.hpp"
#include "support/cli.hpp"
#include "support/csv.hpp"
#include "support/refusal.hpp"

using namespace aggsim;
using namespace aggsim::test;
namespace fs = std::filesystem;

namespace {

// The steps as NCCL's host-run PatRSAlgorithm printed them: "node<child" where a partial arrives,
// "^" where the node's piece then leaves, "*" where it stays (the root).
std::string printed(const std::vector<PatStep>& steps) {
  std::ostringstream out;
  for (const PatStep& s : steps) {
    out << "node" << s.node;
    if (s.child >= 0) out << "<" << s.child;
    out << (s.node == 0 ? "*" : "^") << " ";
  }
  return out.str();
}

// 1 GPU per node: `nodes` single-GPU hosts with 100 Gb/s links.
std::string single_gpu_nodes(int nodes) {
  return fmt::format("{{topology: cluster, nodes: {}, bandwidth: 100Gbps, latency: 1us}}", nodes);
}

std::string call(const std::string& platform, int ranks, const std::string& collective, const std::string& op,
                 const std::string& size, const std::string& extra = "") {
  return fmt::format(
      "name: pat\nranks: {}\nsteps: 1\nplatform: {}\nmodel: {{size: {}, math: off}}\n"
      "algorithm: {{name: nccl_allreduce, gpu: hopper, collective: {}, op: {}{}}}\ncompute: {{reduce_speed: 0}}\n",
      ranks, platform, size, collective, op, extra);
}

}  // namespace

TEST_CASE("PAT's steps are the ones NCCL 2.23.4's PatRSAlgorithm walks", "[nccl][pat]") {
  // Printed by NCCL 2.23.4's PatRSAlgorithm (collectives.h, compiled for the host) for rank 0 of 16
  // with aggFactor 8, of 5 with 2, and of 64 with 8 and with 32.
  CHECK(printed(pat_reduce_scatter_steps(16, 8)) ==
        "node15^ node7^ node11^ node3^ node13^ node5^ node9^ node1^ node14<15^ node6<7^ node10<11^ node2<3^ "
        "node12<14^ node4<6^ node8<10^ node0<2* node12<13^ node4<5^ node8<12^ node0<4* node8<9^ node0<8* "
        "node0<1* ");
  CHECK(printed(pat_reduce_scatter_steps(5, 2)) == "node3^ node2<3^ node4^ node0<2* node1^ node4^ node0<4* node0<1* ");
  const auto children_of_root = [](int ranks, int agg) {
    std::vector<int> out;
    for (const PatStep& s : pat_reduce_scatter_steps(ranks, agg))
      if (s.node == 0 && s.child >= 0) out.push_back(s.child);
    return out;
  };
  CHECK(children_of_root(64, 8) == std::vector<int>{4, 2, 8, 16, 32, 1});
  CHECK(children_of_root(64, 32) == std::vector<int>{2, 4, 8, 16, 32, 1});
  // NCCL's aggregation: doubled while NCCL's 8 FIFO steps allow, below ranks / 2; small parts of a
  // chunk double it further.
  CHECK(pat_aggregation(16, 65536, 1 << 20) == 8);
  CHECK(pat_aggregation(4, 65536, 1 << 20) == 2);
  CHECK(pat_aggregation(2, 65536, 1 << 20) == 1);
  CHECK(pat_aggregation(64, 65536, 1024) == 32);
  CHECK(pat_chunk_bytes(NcclCollective::reduce_scatter, 1 << 30) == 524288);
  CHECK(pat_chunk_bytes(NcclCollective::reduce_scatter, 2 << 20) == 131072);
  CHECK(pat_chunk_bytes(NcclCollective::all_gather, 2 << 20) == 65536);
  // Every piece a rank sends on a dimension is the one its peer takes next there (NCCL's FIFOs):
  // the all-gather's steps are the reduce-scatter's backwards, every rank receiving each other
  // rank's shard once.
  for (int ranks : {2, 3, 5, 8, 12, 16, 33})
    for (NcclCollective c : {NcclCollective::reduce_scatter, NcclCollective::all_gather}) {
      int sent = 0, received = 0;
      for (const PatStep& s : pat_steps(c, ranks, pat_aggregation(ranks, 65536, 1 << 20))) {
        sent += s.send_dim >= 0;
        received += s.recv_dim >= 0;
      }
      CHECK(sent == ranks - 1);
      CHECK(received == ranks - 1);
    }
}

TEST_CASE("PAT's reduce-scatter adds in NCCL's order, and every op reduces", "[nccl][pat][math]") {
  // 4 ranks (aggFactor 2): NCCL adds destination t's shard as ((x[t+1] + x[t+2]) + x[t]) + x[t+3].
  // With 2^24, 1, 1, -2^24 there each + 1 rounds away: 0. Any order adding t's own input or the
  // last rank's earlier is exact (2).
  const int p = 4;
  const float big = std::ldexp(1.0f, 24);
  std::vector<Eigen::VectorXf> inputs(p, Eigen::VectorXf::Zero(2 * p));
  for (int t = 0; t < p; ++t)
    for (int e = 0; e < 2; ++e) {
      inputs[(t + 1) % p][2 * t + e] = big;
      inputs[(t + 2) % p][2 * t + e] = 1;
      inputs[t][2 * t + e] = 1;
      inputs[(t + 3) % p][2 * t + e] = -big;
    }
  CHECK(nccl_pat_reduce_scatter(2, pointers(inputs), ReduceOp{ReduceKind::sum, 1.0}, p) ==
        Eigen::VectorXf::Zero(2 * p));
  // Uneven shards on ranks that are no power of two: every element within n float roundings of the
  // exact sum, min and max exact.
  for (int ranks : {3, 6, 7, 13}) {
    std::vector<Eigen::VectorXf> x;
    for (int m = 0; m < ranks; ++m) {
      Eigen::VectorXf v(41);
      for (int i = 0; i < 41; ++i) v[i] = static_cast<float>(std::sin(1.0 + 7.0 * m + 0.3 * i) * (1 + i));
      x.push_back(v);
    }
    for (ReduceKind kind : {ReduceKind::sum, ReduceKind::min, ReduceKind::max}) {
      INFO(ranks << " ranks, " << reduce_kind_name(kind));
      const Eigen::VectorXf out =
          nccl_pat_reduce_scatter(pat_aggregation(ranks, 65536, 1 << 20), pointers(x), ReduceOp{kind, 1.0}, ranks);
      check_reduced(out, x, kind);
    }
  }
}

TEST_CASE("NCCL 2.23.4 chooses PAT for reduce-scatter and all-gather at one GPU per node where it is faster",
          "[nccl][pat][tuning]") {
  const auto dir = fresh_dir("pat-choice");
  // 16 single-GPU nodes, one 100 Gb/s NIC: 2 channels, the tree graph's 1 channel at 12.5 GB/s.
  // PAT: 8 + log2(16) x 14 / 3.5 + 16 x 2.8 = 68.8 us and 12.5 x 0.85 = 10.6 GB/s; the ring's LL
  // 6.6 + 15 x 5.0 = 81.6 us (the tree's network latency at one GPU per node) at 6.25 x 16/15 GB/s,
  // its Simple 8.4 + 15 x 14 = 218.4 us at 12.5 x 16/15 = 13.3 GB/s: PAT up to about 7.8 MB, then
  // the ring.
  const std::string sixteen = single_gpu_nodes(16);
  CHECK(nccl_call_of(dir, call(sixteen, 16, "reduce_scatter", "sum", "64KiB")).first == "pat/simple");
  CHECK(nccl_call_of(dir, call(sixteen, 16, "all_gather", "avg", "4MiB")).first == "pat/simple");
  CHECK(nccl_call_of(dir, call(sixteen, 16, "reduce_scatter", "sum", "64MiB")).first == "ring/simple");
  // No PAT reduce-scatter for avg (NCCL's PreMulSum): the ring's LL.
  CHECK(nccl_call_of(dir, call(sixteen, 16, "reduce_scatter", "avg", "64KiB")).first == "ring/ll");
  // Two nodes: PAT's 17.6 us against the ring's LL at 11.6 us and twice PAT's bandwidth.
  CHECK(nccl_call_of(dir, call(single_gpu_nodes(2), 2, "reduce_scatter", "sum", "64KiB")).first == "ring/ll");
  CHECK(nccl_call_of(dir, call(single_gpu_nodes(2), 2, "all_gather", "sum", "1GiB")).first == "ring/simple");
  // Eight GPUs a node: NCCL never enables PAT.
  for (const std::string size : {"64KiB", "4MiB"})
    CHECK(nccl_call_of(dir, call(kH100TwoNodes, 16, "reduce_scatter", "sum", size)).first.rfind("pat/", 0) != 0);
  // Forced, it runs where NCCL allows it.
  CHECK(nccl_call_of(dir, call(sixteen, 16, "all_gather", "sum", "1GiB", ", nccl_algorithm: pat")).first == "pat/simple");
  fs::remove_all(dir);
}

TEST_CASE("A forced PAT is refused where NCCL does not run it", "[nccl][pat][tuning]") {
  check_refused(call(kH100TwoNodes, 16, "reduce_scatter", "sum", "1MiB", ", nccl_algorithm: pat"),
                {"algorithm.nccl_algorithm", "one GPU per node", "has 8"});
  check_refused(call(single_gpu_nodes(4), 4, "reduce_scatter", "avg", "1MiB", ", nccl_algorithm: pat"),
                {"algorithm.nccl_algorithm", "not for avg"});
  check_refused(call(single_gpu_nodes(4), 4, "all_reduce", "sum", "1MiB", ", nccl_algorithm: pat"),
                {"algorithm.nccl_algorithm", "reduce_scatter and all_gather only"});
  check_refused(call(single_gpu_nodes(4), 4, "all_gather", "sum", "1MiB", ", nccl_algorithm: pat, protocol: ll"),
                {"algorithm.protocol", "simple protocol only"});
}

TEST_CASE("aggsim perf --collective reduce_scatter shows PAT with the run's time", "[nccl][pat][perf]") {
  const auto dir = fresh_dir("pat-perf");
  write_file(dir / "p.yaml", call(single_gpu_nodes(16), 16, "all_reduce", "sum", "1MiB"));
  const auto r = run_aggsim(
      {"perf", "p.yaml", "--collective", "reduce_scatter", "--min", "1MiB", "--max", "1MiB", "--csv", "p.csv"}, dir);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto rows = read_csv_rows(read_file(dir / "p.csv"));
  REQUIRE(rows.size() == 1);
  CHECK(rows[0].at("choice").find("pat") != std::string::npos);
  const auto [choice, time] = nccl_call_of(dir, call(single_gpu_nodes(16), 16, "reduce_scatter", "sum", "1MiB"));
  CHECK(choice == "pat/simple");
  CHECK(std::stod(rows[0].at("time_s")) == Approx(time).epsilon(1e-9));
  fs::remove_all(dir);
}

TEST_CASE("NCCL's all-reduce runs NVLS only for the ops and types its switch reduces", "[nccl][nvls][tuning]") {
  // ncclNvlsSupported (NCCL 2.21.5 src/include/device.h), which src/enqueue.cc ands into the choice:
  // fp32 by sum only; bf16 and fp16 by sum, min or max; avg (PreMulSum) never.
  CHECK(nccl_nvls_reduces(ReduceOp{ReduceKind::sum, 1.0}));
  CHECK_FALSE(nccl_nvls_reduces(ReduceOp{ReduceKind::max, 1.0}));
  CHECK(nccl_nvls_reduces(ReduceOp{ReduceKind::max, 1.0}, WireDtype::bf16));
  CHECK(nccl_nvls_reduces(ReduceOp{ReduceKind::min, 1.0}, WireDtype::fp16));
  CHECK_FALSE(nccl_nvls_reduces(ReduceOp{ReduceKind::avg, 1.0}, WireDtype::bf16));
  // One node of 8 H100: NVLS's 467 GB/s against the ring's 450 for a 1 GiB sum; avg and fp32 max
  // cannot run it.
  const auto dir = fresh_dir("nvls-op");
  CHECK(nccl_call_of(dir, call(kH100Node, 8, "all_reduce", "sum", "1GiB")).first == "nvls/simple");
  for (const std::string op : {"avg", "max"})
    CHECK(nccl_call_of(dir, call(kH100Node, 8, "all_reduce", op, "1GiB")).first.rfind("nvls", 0) != 0);
  check_refused(call(kH100Node, 8, "all_reduce", "avg", "1GiB", ", nccl_algorithm: nvls"),
                {"algorithm.nccl_algorithm", "sum only"});
  fs::remove_all(dir);
}

TEST_CASE("fsdp over NCCL runs PAT where NCCL chooses it, the same bits at flow and chunk level", "[nccl][pat][fsdp]") {
  // 32 single-GPU hosts at 10 Gb/s, 1 MB calls with Simple: PAT's 117.6 us + 1 MB / 1.06 GB/s against
  // the ring's 442.4 us + 1 MB / 1.29 GB/s. With op: sum both collectives run PAT; with avg the
  // reduce-scatter runs the ring (NCCL's PreMulSum) and the gathers PAT.
  const auto dir = fresh_dir("pat-fsdp");
  const auto scenario = [](const std::string& op, const std::string& movement) {
    return fmt::format(
        "seed: 5\nranks: 32\nsteps: 3\nplatform: {{topology: cluster, hosts: 32, bandwidth: 10Gbps, latency: 1us, "
        "speed: 1Gf}}\nnetwork: alpha_beta\ncompute: {{reduce_speed: 0}}\n"
        "algorithm: {{name: fsdp, collectives: nccl, {}protocol: simple, movement: {}}}\nmodel: {{size: 1MB}}\n"
        "workload: {{problem: mlp, dim: 8, hidden: 6, classes: 3, batch: 4, eval_every: 1, momentum: 0.5}}\n",
        op, movement);
  };
  const auto run = [&](const std::string& yaml, const std::string& out) {
    write_file(dir / (out + ".yaml"), yaml);
    const auto r = run_aggsim({"run", out + ".yaml", "--out", out, "-q"}, dir);
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    return std::make_pair(read_csv_rows(read_file(dir / out / "collectives.csv")),
                          read_csv_rows(read_file(dir / out / "steps.csv")));
  };
  const auto [flow_calls, flow_steps] = run(scenario("op: sum, ", "flow"), "flow");
  const auto [chunk_calls, chunk_steps] = run(scenario("op: sum, ", "chunk"), "chunk");
  REQUIRE(flow_calls.size() == 10);
  for (const auto& calls : {flow_calls, chunk_calls})
    for (const auto& row : calls) CHECK(row.at("nccl_algorithm") == "pat");
  REQUIRE(flow_steps.size() == chunk_steps.size());
  for (std::size_t i = 0; i < flow_steps.size(); ++i) {
    CHECK(flow_steps[i].at("loss") == chunk_steps[i].at("loss"));
    CHECK(flow_steps[i].at("accuracy") == chunk_steps[i].at("accuracy"));
    CHECK(std::stod(flow_steps[i].at("step_time_s")) == Approx(std::stod(chunk_steps[i].at("step_time_s"))).epsilon(0.05));
  }
  const auto [avg_calls, avg_steps] = run(scenario("", "flow"), "avg");
  for (const auto& row : avg_calls)
    CHECK(row.at("nccl_algorithm") == (row.at("collective") == "reduce_scatter" ? "ring" : "pat"));
  fs::remove_all(dir);
}
