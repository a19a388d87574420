// GossipGraD: partner schedules against the paper's definitions, the simulated exchange follows
// them, subgroup members stay equal, and the alpha-beta cost of a step is constant in p.
#include <fmt/format.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <set>

#include "algorithms/decentralized/gossip_schedule.hpp"
#include "gossip_run.hpp"
#include "support/cli.hpp"
#include "support/reduction_check.hpp"

using namespace aggsim;
using namespace aggsim::test;

namespace {

using Table = std::vector<std::vector<int>>;  // [k][i]: partner of position i at power 2^k

// DISSEMINATION (GossipGraD, Sec. 4): at step k, i sends to (i + 2^k) mod p, receives from (i - 2^k) mod p.
const Table kDissSend8 = {{1, 2, 3, 4, 5, 6, 7, 0}, {2, 3, 4, 5, 6, 7, 0, 1}, {4, 5, 6, 7, 0, 1, 2, 3}};
const Table kDissRecv8 = {{7, 0, 1, 2, 3, 4, 5, 6}, {6, 7, 0, 1, 2, 3, 4, 5}, {4, 5, 6, 7, 0, 1, 2, 3}};
// CUBE: at step k, i exchanges with i xor 2^k.
const Table kCube8 = {{1, 0, 3, 2, 5, 4, 7, 6}, {2, 3, 0, 1, 6, 7, 4, 5}, {4, 5, 6, 7, 0, 1, 2, 3}};
// CUBE on subgroup counts that are even but no power of two, as torchdistx's gossip_grad runs them
// (its own test uses 6 workers): the partner of i is i xor 2^k, and -1 (no exchange that step) when
// that is past the last subgroup. Written out by hand: 6 subgroups, powers 1, 2, 4; 12 subgroups,
// powers 1, 2, 4, 8.
const Table kCube6 = {{1, 0, 3, 2, 5, 4}, {2, 3, 0, 1, -1, -1}, {4, 5, -1, -1, 0, 1}};
const Table kCube12 = {{1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10},
                       {2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9},
                       {4, 5, 6, 7, 0, 1, 2, 3, -1, -1, -1, -1},
                       {8, 9, 10, 11, -1, -1, -1, -1, 0, 1, 2, 3}};
const Table kDissSend16 = {{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 0},
                           {2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 0, 1},
                           {4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3},
                           {8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7}};
const Table kDissRecv16 = {{15, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14},
                           {14, 15, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13},
                           {12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11},
                           {8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7}};
const Table kCube16 = {{1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14},
                       {2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13},
                       {4, 5, 6, 7, 0, 1, 2, 3, 12, 13, 14, 15, 8, 9, 10, 11},
                       {8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7}};

std::string scenario(int p, const std::string& algorithm, int steps = 4, int dim = 50,
                     const std::string& size = "64kB", const std::string& math = "on") {
  return fmt::format(R"(
seed: 5
ranks: {p}
steps: {steps}
platform: {{topology: cluster, hosts: {p}, bandwidth: 10Gbps, latency: 1us}}
network: alpha_beta
model: {{size: {size}, proxy_dim: {dim}, math: {math}}}
algorithm: {alg}
)",
                     fmt::arg("p", p), fmt::arg("steps", steps), fmt::arg("dim", dim), fmt::arg("size", size),
                     fmt::arg("math", math), fmt::arg("alg", algorithm));
}

}  // namespace

TEST_CASE("DISSEMINATION and CUBE partners match the paper's definitions for p = 8 and 16",
          "[gossipgrad][schedule]") {
  struct Case {
    int p;
    const Table *send, *recv, *cube;
  };
  for (const Case c :
       {Case{8, &kDissSend8, &kDissRecv8, &kCube8}, Case{16, &kDissSend16, &kDissRecv16, &kCube16}}) {
    const int period = static_cast<int>(c.send->size());
    REQUIRE(gossip_period(c.p) == period);
    // Two periods: the powers rotate 2^0 .. 2^(log p - 1) and start over.
    for (int step = 0; step < 2 * period; ++step)
      for (int i = 0; i < c.p; ++i) {
        INFO("p " << c.p << ", step " << step << ", position " << i);
        const auto k = static_cast<std::size_t>(step % period), ui = static_cast<std::size_t>(i);
        const GossipPeers d = gossip_peers(GossipSchedule::dissemination, i, c.p, step);
        CHECK(d.send == (*c.send)[k][ui]);
        CHECK(d.recv == (*c.recv)[k][ui]);
        const GossipPeers q = gossip_peers(GossipSchedule::cube, i, c.p, step);
        CHECK(q.send == (*c.cube)[k][ui]);
        CHECK(q.recv == (*c.cube)[k][ui]);
      }
  }
}

TEST_CASE("CUBE on 6 and 12 subgroups follows torchdistx's rule: i xor 2^k, no exchange past the last",
          "[gossipgrad][schedule]") {
  for (const auto& [p, table] : {std::pair{6, &kCube6}, std::pair{12, &kCube12}}) {
    const int period = static_cast<int>(table->size());
    REQUIRE(gossip_period(p) == period);  // ceil(log2 p), as torchdistx's gossip_period
    for (int step = 0; step < 2 * period; ++step)
      for (int i = 0; i < p; ++i) {
        INFO("p " << p << ", step " << step << ", position " << i);
        const int expected = (*table)[static_cast<std::size_t>(step % period)][static_cast<std::size_t>(i)];
        const GossipPeers q = gossip_peers(GossipSchedule::cube, i, p, step);
        CHECK(q.send == expected);
        CHECK(q.recv == expected);
      }
  }
}

TEST_CASE("CUBE partners are symmetric, DISSEMINATION partners vary", "[gossipgrad][schedule]") {
  for (int p : {8, 16, 64}) {
    for (int step = 0; step < gossip_period(p); ++step)
      for (int i = 0; i < p; ++i) {
        const GossipPeers q = gossip_peers(GossipSchedule::cube, i, p, step);
        CHECK(gossip_peers(GossipSchedule::cube, q.send, p, step).send == i);
      }
    for (int i = 0; i < p; ++i) {
      std::set<int> sends, recvs;
      int differing = 0;
      for (int step = 0; step < gossip_period(p); ++step) {
        const GossipPeers d = gossip_peers(GossipSchedule::dissemination, i, p, step);
        sends.insert(d.send);
        recvs.insert(d.recv);
        differing += d.send != d.recv;
      }
      // log2 p different partners per period, and sending and receiving partners differ except at 2^k = p/2.
      CHECK(sends.size() == static_cast<std::size_t>(gossip_period(p)));
      CHECK(recvs.size() == static_cast<std::size_t>(gossip_period(p)));
      CHECK(differing == gossip_period(p) - 1);
    }
  }
}

TEST_CASE("the shuffled virtual topology is a seeded permutation, new every period",
          "[gossipgrad][schedule]") {
  const auto a = virtual_topology(16, true, 5, 0), b = virtual_topology(16, true, 5, 1);
  std::vector<int> sorted = a;
  std::sort(sorted.begin(), sorted.end());
  for (int i = 0; i < 16; ++i) CHECK(sorted[static_cast<std::size_t>(i)] == i);
  CHECK(a == virtual_topology(16, true, 5, 0));
  CHECK(a != b);
  CHECK(a != virtual_topology(16, true, 6, 0));
  const auto id = virtual_topology(16, false, 5, 3);
  for (int i = 0; i < 16; ++i) CHECK(id[static_cast<std::size_t>(i)] == i);
}

TEST_CASE("each rank averages with the partner the schedule names", "[gossipgrad][math]") {
  for (const std::string schedule : {"dissemination", "cube"}) {
    for (const std::string shuffle : {"false", "true"}) {
      INFO(schedule << ", shuffle " << shuffle);
      const int p = 8;
      const GossipRun run = run_gossip(scenario(
          p, fmt::format("{{name: gossipgrad, schedule: {}, group_size: 1, shuffle: {}}}", schedule, shuffle),
          7));
      const GossipSchedule s = schedule == "cube" ? GossipSchedule::cube : GossipSchedule::dissemination;
      for (int step = 0; step < 7; ++step) {
        const auto order = virtual_topology(p, shuffle == "true", 5, step / gossip_period(p));
        std::vector<int> position(static_cast<std::size_t>(p));
        for (int i = 0; i < p; ++i)
          position[static_cast<std::size_t>(order[static_cast<std::size_t>(i)])] = i;
        const auto& st = run.steps[static_cast<std::size_t>(step)];
        for (int r = 0; r < p; ++r) {
          const int from = order[static_cast<std::size_t>(
              gossip_peers(s, position[static_cast<std::size_t>(r)], p, step).recv)];
          const Eigen::VectorXf expected =
              0.5f * (st.before[static_cast<std::size_t>(r)] + st.before[static_cast<std::size_t>(from)]);
          CHECK((st.after[static_cast<std::size_t>(r)] - expected).cwiseAbs().maxCoeff() == 0.0f);
        }
        // Every model is sent once and received once: the mean is preserved.
        CHECK((rank_mean(st.after) - rank_mean(st.before)).cwiseAbs().maxCoeff() <= 1e-6);
      }
    }
  }
}

TEST_CASE("CUBE on 6 and 12 subgroups exchanges by torchdistx's rule and counts the skipped exchanges",
          "[gossipgrad][math]") {
  struct Case {
    int subgroups, group_size;
    const Table* table;
    int skipped_per_period;  // the -1 entries of the table
  };
  for (const Case c : {Case{6, 1, &kCube6, 4}, Case{12, 2, &kCube12, 8}}) {
    INFO(c.subgroups << " subgroups of " << c.group_size);
    const int p = c.subgroups * c.group_size, period = static_cast<int>(c.table->size()), steps = 2 * period;
    const GossipRun run = run_gossip(scenario(
        p, fmt::format("{{name: gossipgrad, schedule: cube, group_size: {}, shuffle: false}}", c.group_size),
        steps));
    for (int step = 0; step < steps; ++step) {
      const auto& st = run.steps[static_cast<std::size_t>(step)];
      for (int r = 0; r < p; ++r) {
        INFO("step " << step << ", rank " << r);
        const int group = r / c.group_size;
        const int partner =
            (*c.table)[static_cast<std::size_t>(step % period)][static_cast<std::size_t>(group)];
        // The subgroup's average first (a ring all-reduce inside it), then the leaders' exchange.
        Eigen::VectorXd mine = Eigen::VectorXd::Zero(st.before[0].size());
        Eigen::VectorXd theirs = mine;
        for (int m = 0; m < c.group_size; ++m) {
          mine += st.before[static_cast<std::size_t>(group * c.group_size + m)].cast<double>() / c.group_size;
          if (partner >= 0)
            theirs +=
                st.before[static_cast<std::size_t>(partner * c.group_size + m)].cast<double>() / c.group_size;
        }
        const Eigen::VectorXd expected = partner >= 0 ? Eigen::VectorXd(0.5 * (mine + theirs)) : mine;
        CHECK((st.after[static_cast<std::size_t>(r)].cast<double>() - expected).cwiseAbs().maxCoeff() <=
              1e-5);
      }
    }
    CHECK(run.fields.at("gossip_exchanges_skipped") == 2 * c.skipped_per_period);
  }
  // DISSEMINATION never skips, and reports no such count.
  const GossipRun diss = run_gossip(scenario(6, "{name: gossipgrad, group_size: 1}", 3));
  CHECK(diss.fields.count("gossip_exchanges_skipped") == 0);
}

TEST_CASE("with local subgroups of 2 both members hold equal vectors after each step", "[gossipgrad][math]") {
  for (const std::string schedule : {"dissemination", "cube"}) {
    INFO(schedule);
    const GossipRun run = run_gossip(
        scenario(16, fmt::format("{{name: gossipgrad, schedule: {}, group_size: 2}}", schedule), 5));
    for (const auto& st : run.steps) {
      for (std::size_t g = 0; g < 8; ++g)
        CHECK((st.after[2 * g] - st.after[2 * g + 1]).cwiseAbs().maxCoeff() == 0.0f);
      // Different subgroups do not agree yet (gossip, not all-reduce).
      CHECK((st.after[0] - st.after[2]).cwiseAbs().maxCoeff() > 0.0f);
    }
  }
}

TEST_CASE("a gossip step costs one exchange plus the subgroup all-reduce and broadcast, constant in p",
          "[gossipgrad][formula]") {
  // Reductions free (reduce_speed: 0): the alpha-beta forms.
  const double alpha = 2e-6, beta = 1.25e9, size = 4096000;  // S divisible by 4 * 1024
  const std::string bytes = fmt::format("{}B", size);
  for (const std::string schedule : {"dissemination", "cube"}) {
    for (int g : {1, 2}) {
      // Ring all-reduce in the subgroup, one exchange of S, binomial broadcast (ceil(log2 g) rounds).
      const double allreduce = 2.0 * (g - 1) * (alpha + size / g / beta);
      const double exchange = alpha + size / beta;
      const double broadcast = (g == 2 ? 1 : 0) * (alpha + size / beta);
      for (int p : {16, 128, 1024}) {
        INFO(schedule << ", g " << g << ", p " << p);
        const auto times = step_times(
            scenario(p, fmt::format("{{name: gossipgrad, schedule: {}, group_size: {}}}", schedule, g), 3, 1,
                     bytes, "off"),
            {"compute.reduce_speed=0"});
        for (double t : times) CHECK(t == Approx(allreduce + exchange + broadcast).epsilon(1e-9));
      }
    }
  }
  // Ring all-reduce on the same platform grows with p: 2(p-1)(alpha + S/(p beta)), checked by
  // simulation up to 256 ranks (a 1,024-rank ring is 2 M messages, too slow for a unit test); at
  // 1,024 ranks the same closed form is more than 3x the gossip step.
  auto ring_formula = [&](int p) { return 2.0 * (p - 1) * (alpha + size / p / beta); };
  double previous = 0;
  for (int p : {16, 64, 256}) {
    const auto times =
        step_times(scenario(p, "{name: ring_allreduce}", 1, 1, bytes, "off"), {"compute.reduce_speed=0"});
    CHECK(times.at(0) == Approx(ring_formula(p)).epsilon(1e-9));
    CHECK(times.at(0) > previous);
    previous = times.at(0);
  }
  CHECK(ring_formula(1024) > 3 * (alpha + size / beta));
}

TEST_CASE("asynchronous gossip with staleness 0 is the synchronous scheme, with staleness it drains",
          "[gossipgrad][async]") {
  const std::string yaml = scenario(16, "{name: gossipgrad, group_size: 2}", 6);
  const GossipRun sync = run_gossip(yaml);
  const GossipRun stale0 = run_gossip(yaml, {"algorithm.asynchronous=true", "algorithm.staleness=0"});
  for (std::size_t s = 0; s < 6; ++s)
    for (std::size_t r = 0; r < 16; ++r)
      CHECK((sync.steps[s].after[r] - stale0.steps[s].after[r]).cwiseAbs().maxCoeff() == 0.0f);
  const GossipRun stale3 = run_gossip(yaml, {"algorithm.asynchronous=true", "algorithm.staleness=3"});
  CHECK(stale3.messages == sync.messages);
  for (const auto& st : stale3.steps)
    for (std::size_t g = 0; g < 8; ++g)
      CHECK((st.after[2 * g] - st.after[2 * g + 1]).cwiseAbs().maxCoeff() == 0.0f);
}

TEST_CASE("gossipgrad rejects ops it cannot compute, uneven subgroups and compressors",
          "[gossipgrad][check]") {
  CHECK_THROWS_WITH(
      load_scenario_text(scenario(16, "{name: gossipgrad}") + "compression: {name: topk}\n", "t.yaml"),
      Catch::Contains("t.yaml:9:") && Catch::Contains("does not use compressor 'topk'"));
  CHECK_THROWS_WITH(load_scenario_text(scenario(16, "{name: gossipgrad, op: min}"), "t.yaml"),
                    Catch::Contains("algorithm.op") && Catch::Contains("cannot compute op min"));
  CHECK_THROWS_WITH(load_scenario_text(scenario(16, "{name: gossipgrad, group_size: 3}"), "t.yaml"),
                    Catch::Contains("algorithm.group_size") && Catch::Contains("do not split"));
}

TEST_CASE("by default the subgroups are the ranks sharing a node", "[gossipgrad][math]") {
  // 4 nodes of 2 hosts (aggsim_node property), every host on its own link to one router.
  std::string hosts, links;
  for (int h = 0; h < 8; ++h) {
    hosts += fmt::format(R"(<host id="host-{0}" speed="100Gf"><prop id="aggsim_node" value="node-{1}"/></host>
)",
                         h, h / 2);
    links += fmt::format(R"(<link id="link-{0}" bandwidth="10Gbps" latency="1us"/>
)",
                         h);
  }
  std::string routes;
  for (int h = 0; h < 8; ++h)
    routes += fmt::format(R"(<route src="host-{0}" dst="switch"><link_ctn id="link-{0}"/></route>
)",
                          h);
  const auto dir = fresh_dir("gossip-nodes");
  write_file(dir / "nodes.xml",
             "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
             "<platform version=\"4.1\"><zone id=\"nodes\" routing=\"Floyd\">\n" +
                 hosts + "<router id=\"switch\"/>\n" + links + routes + "</zone></platform>\n");
  const std::string yaml = fmt::format(R"(
seed: 5
ranks: 8
steps: 4
platform: {{file: {}}}
network: alpha_beta
model: {{size: 64kB, proxy_dim: 20}}
algorithm: {{name: gossipgrad}}
compute: {{reduce_speed: 0}}
)",
                                       (dir / "nodes.xml").string());
  const GossipRun run = run_gossip(yaml);
  for (const auto& st : run.steps)
    for (std::size_t n = 0; n < 4; ++n)
      CHECK((st.after[2 * n] - st.after[2 * n + 1]).cwiseAbs().maxCoeff() == 0.0f);
  // Per node and step: 2 x 2 ring all-reduce messages, 1 gossip message from the leader, 1 broadcast.
  CHECK(run.messages == 4u * 4u * 6u);
  std::filesystem::remove_all(dir);
}
