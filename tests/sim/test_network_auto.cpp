// network: auto models each class of link as what it is (CHANGELOG, "network defaults to auto"):
// inside a node latency + size / bandwidth, between nodes by the fabric (ethernet: LV08's TCP
// calibration, infiniband and roce: latency + size / bandwidth). Checked against closed forms of a
// two-rank ring all-reduce, 2 steps of S/2 (reductions free): under latency + size / bandwidth
// 2 (a + (S/2) / b); under LV08, with both directions busy, 2 (13.01 a + (S/2) 1.05 / (0.97 b))
// (DESIGN: LV08's factors and 5 % reverse ACK traffic), a and b the route's latency and narrowest
// bandwidth. On an ethernet fabric the links inside a node keep factors of 1, but SimGrid's
// reverse ACK traffic applies to every route or none: 2 (a + (S/2) 1.05 / b) there.
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "support/cli.hpp"

using namespace aggsim::test;

namespace {

constexpr double kS = 8e6;  // model.size
constexpr double kLat = 1e-6, kBw = 100e9 / 8, kIntraLat = 1e-6, kIntraBw = 300e9;

struct Run {
  double sim_time = 0;
  std::string err, resolved;
};

Run run_ranks(const std::string& platform, const std::string& network, int ranks = 2) {
  const auto dir = fresh_dir("auto");
  write_file(dir / "s.yaml", fmt::format("name: auto\nranks: {}\nsteps: 1\nplatform: {}\n{}model: {{size: {}B, math: off}}\n"
                                         "algorithm: {{name: ring_allreduce}}\ncompute: {{reduce_speed: 0}}\n",
                                         ranks, platform, network, kS));
  const auto r = run_aggsim({"run", "s.yaml", "--out", "out"}, dir);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  Run out;
  out.sim_time = nlohmann::json::parse(read_file(dir / "out" / "summary.json"))["sim_time_s"].get<double>();
  out.err = r.err;
  out.resolved = read_file(dir / "out" / "resolved.yaml");
  std::filesystem::remove_all(dir);
  return out;
}

double plain(double a, double b) {
  return 2 * (a + kS / 2 / b);
}
double lv08(double a, double b) {
  return 2 * (13.01 * a + kS / 2 * 1.05 / (0.97 * b));
}

}  // namespace

TEST_CASE("network auto: inside a node as written, between nodes by the fabric", "[network][auto]") {
  const std::string two_gpus = "{topology: cluster, nodes: 1, gpus_per_node: 2, fabric: ethernet}";
  const auto nodes = [](const char* fabric) {
    return fmt::format("{{topology: cluster, nodes: 2, bandwidth: 100Gbps, latency: 1us, fabric: {}}}", fabric);
  };
  // Two GPUs of one node: their links keep their values even on an ethernet fabric.
  CHECK(run_ranks(two_gpus, "").sim_time == Approx(plain(2 * kIntraLat, kIntraBw / 1.05)).epsilon(1e-9));
  CHECK(run_ranks("{topology: cluster, nodes: 1, gpus_per_node: 2}", "").sim_time ==
        Approx(plain(2 * kIntraLat, kIntraBw)).epsilon(1e-9));
  // Two nodes: the fabric decides.
  CHECK(run_ranks(nodes("ethernet"), "").sim_time == Approx(lv08(2 * kLat, kBw)).epsilon(1e-9));
  CHECK(run_ranks(nodes("infiniband"), "").sim_time == Approx(plain(2 * kLat, kBw)).epsilon(1e-9));
  CHECK(run_ranks(nodes("roce"), "").sim_time == Approx(plain(2 * kLat, kBw)).epsilon(1e-9));
  // A named preset applies to every link whatever the fabric: lv08 inside the node too.
  CHECK(run_ranks(two_gpus, "network: lv08\n").sim_time ==
        Approx(lv08(2 * kIntraLat, kIntraBw)).epsilon(1e-9));
  CHECK(run_ranks(nodes("ethernet"), "network: alpha_beta\n").sim_time ==
        Approx(plain(2 * kLat, kBw)).epsilon(1e-9));
}

TEST_CASE("the start line and resolved.yaml give each link class's effective latency and bandwidth",
          "[network][auto]") {
  const auto r = run_ranks(
      "{topology: cluster, nodes: 2, gpus_per_node: 2, bandwidth: 100Gbps, latency: 1us, fabric: ethernet}", "", 3);
  // Ranks 0 and 1 share node 0: the first class is theirs, then rank 0 to node 1.
  CHECK_THAT(r.err, Catch::Contains("network auto (nvlink 2 us, 300 GB/s; ethernet 52.04 us, 12.12 GB/s)"));
  CHECK_THAT(r.resolved, Catch::Contains("#   nvlink: latency 1.9999999999999999e-06 s, bandwidth 300000000000 B/s"));
  CHECK_THAT(r.resolved, Catch::Contains(fmt::format("#   ethernet: latency {:.17g} s, bandwidth {:.17g} B/s",
                                                     13.01 * 4e-6, 0.97 * kBw)));
}
