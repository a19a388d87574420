// Parameter server: exact reductions (colocated and dedicated servers, 1-3 shards), k-of-n step time
// under stragglers against the alpha-beta closed form, and the asynchronous staleness bound.
#include <fmt/format.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <map>
#include <numeric>
#include <simgrid/s4u.hpp>

#include "algorithms/centralized/parameter_server.hpp"
#include "alpha_beta.hpp"
#include "support/cli.hpp"
#include "support/reduction_check.hpp"

using namespace aggsim;
using namespace aggsim::test;

namespace {

std::string ps_scenario(int p, const std::string& platform, const std::string& options, int steps = 2,
                        const std::string& network = "alpha_beta", const std::string& size = "1MB",
                        int dim = 1001) {
  return fmt::format(R"(
seed: 5
ranks: {p}
steps: {steps}
platform: {platform}
network: {network}
model: {{size: {size}, proxy_dim: {dim}}}
algorithm: {{name: parameter_server, {options}}}
compute: {{reduce_speed: 0}}
)",
                     fmt::arg("p", p), fmt::arg("steps", steps), fmt::arg("platform", platform),
                     fmt::arg("network", network), fmt::arg("size", size), fmt::arg("dim", dim),
                     fmt::arg("options", options));
}

std::string cluster(int hosts) {
  return fmt::format("{{topology: cluster, hosts: {}, bandwidth: 10Gbps, latency: 1us}}", hosts);
}

// What every rank held before and after each step's aggregation, and when its aggregation ended.
struct Trace {
  std::vector<std::vector<Eigen::VectorXf>> before, after;  // [step][rank]
  std::vector<std::vector<double>> end;                     // [step][rank]
  std::vector<double> step_times;
  ParameterServerStats stats;
  std::uint64_t messages = 0;
};

// Runs the scenario in a child and ships the trace back as text.
Trace trace_of(const std::string& yaml) {
  const std::string text = run_isolated([&] {
    const Scenario sc = load_scenario_text(yaml, "test.yaml");
    std::string out;
    SimulationHooks hooks;
    hooks.after_aggregate = [&](int rank, int step, const Eigen::VectorXf& in, const Eigen::VectorXf& res) {
      out += fmt::format("v {} {} {:.17g} {}", step, rank, simgrid::s4u::Engine::get_clock(), in.size());
      for (float x : in) out += fmt::format(" {:.9g}", x);
      for (float x : res) out += fmt::format(" {:.9g}", x);
      out += "\n";
    };
    const auto result = simulate(sc, {}, hooks);
    for (const auto& s : summarize_steps(result.log)) out += fmt::format("t {:.17g}\n", s.step_time_s);
    // The run's statistics, as summary.json reports them.
    std::map<std::string, double> st;
    for (const auto& f : result.summary_fields) st[f.key] = f.value;
    out += fmt::format("s {} {} {} {}\n", st.at("max_staleness"), st.at("deferred_pulls"),
                       st.at("discarded_pushes"), result.messages_sent);
    return out;
  });
  Trace t;
  std::istringstream in(text);
  for (std::string kind; in >> kind;) {
    if (kind == "v") {
      int step = 0, rank = 0;
      double clock = 0;
      Eigen::Index n = 0;
      in >> step >> rank >> clock >> n;
      const auto grow = [&](auto& v) {
        if (v.size() <= static_cast<std::size_t>(step)) v.resize(static_cast<std::size_t>(step) + 1);
        auto& row = v[static_cast<std::size_t>(step)];
        if (row.size() <= static_cast<std::size_t>(rank)) row.resize(static_cast<std::size_t>(rank) + 1);
        return &row[static_cast<std::size_t>(rank)];
      };
      Eigen::VectorXf* b = grow(t.before);
      Eigen::VectorXf* a = grow(t.after);
      *grow(t.end) = clock;
      b->resize(n);
      a->resize(n);
      for (Eigen::Index i = 0; i < n; ++i) in >> (*b)[i];
      for (Eigen::Index i = 0; i < n; ++i) in >> (*a)[i];
    } else if (kind == "t") {
      double x = 0;
      in >> x;
      t.step_times.push_back(x);
    } else if (kind == "s") {
      in >> t.stats.max_staleness >> t.stats.deferred_pulls >> t.stats.discarded_pushes >> t.messages;
    } else {
      FAIL("unexpected trace output: " << text.substr(0, 300));
    }
  }
  if (t.step_times.empty()) FAIL("no trace: " << text.substr(0, 300));
  return t;
}

std::vector<Eigen::VectorXf> inputs_of(const Trace& t, int step, const std::vector<int>& ranks) {
  std::vector<Eigen::VectorXf> v;
  for (int r : ranks) v.push_back(t.before[static_cast<std::size_t>(step)][static_cast<std::size_t>(r)]);
  return v;
}

double max_abs_diff(const Eigen::VectorXf& a, const Eigen::VectorXd& b) {
  return (a.cast<double>() - b).cwiseAbs().maxCoeff();
}

// A star of hosts with separate up and down links (Gb/s each), all with 1 us of latency: host i's
// messages cross up-i, then the receiver's down link.
std::string star_platform(const std::vector<double>& up_gbps, const std::vector<double>& down_gbps) {
  std::string xml = R"(<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1">
<zone id="stragglers" routing="Full">
)";
  const int n = static_cast<int>(up_gbps.size());
  for (int i = 0; i < n; ++i) {
    xml += fmt::format("  <host id=\"host-{}\" speed=\"100Gf\"/>\n", i);
    xml += fmt::format("  <link id=\"up-{}\" bandwidth=\"{}Gbps\" latency=\"1us\"/>\n", i,
                       up_gbps[static_cast<std::size_t>(i)]);
    xml += fmt::format("  <link id=\"down-{}\" bandwidth=\"{}Gbps\" latency=\"1us\"/>\n", i,
                       down_gbps[static_cast<std::size_t>(i)]);
  }
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j)
      if (i != j)
        xml += fmt::format(
            "  <route src=\"host-{}\" dst=\"host-{}\" symmetrical=\"NO\"><link_ctn id=\"up-{}\"/>"
            "<link_ctn id=\"down-{}\"/></route>\n",
            i, j, i, j);
  return xml + "</zone>\n</platform>\n";
}

// Each worker's upload can be slow while the server's links and every download stay at 10 Gb/s.
std::string straggler_platform(const std::vector<double>& up_gbps) {
  return star_platform(up_gbps, std::vector<double>(up_gbps.size(), 10));
}

std::string platform_file(const std::string& xml) {
  const auto path = fresh_dir("ps-platform") / "platform.xml";
  write_file(path, xml);
  return fmt::format("{{file: {}}}", path.string());
}

}  // namespace

// Colocated servers: every rank is a worker and ends with the server's bits. One server: every op,
// every p, by model and by layer; several shards (servers <= p): a smaller cross-product.
TEST_CASE("colocated parameter server gives every rank the exact reduction, bit-identical", "[ps][math]") {
  check_identity_math("name: parameter_server");
  check_identity_math("name: parameter_server, servers: 2", {2, 5, 8},
                      {"sum", "min", "custom_avg, denominator: 2.5"});
  check_identity_math("name: parameter_server, servers: 3", {3, 13, 64}, {"avg", "max"});
}

namespace {

// Dedicated: ranks 0..S-1 only serve (so p >= S + 1). The reduction is over the workers' inputs
// (ranks S..p-1) alone, avg divides by the number of workers, and every worker ends with it bit for
// bit. Server s ends with its shard of each aggregated vector and zeros elsewhere: every element of
// a server's vector is 0 or the workers' value, and the servers' vectors add up to the workers'
// (each element is served by exactly one server). By model the shard is chunk s of S, as the
// collectives chunk.
void check_dedicated(int p, int servers, const std::string& op, Scope scope) {
  INFO("op " << op << ", servers " << servers << ", p " << p << ", " << scope_name(scope));
  const std::string yaml = identity_scenario(
      fmt::format("name: parameter_server, servers: {}, placement: dedicated", servers), p, op, scope);
  const ReduceOp reduce_op = load_scenario_text(yaml, "test.yaml").algorithm.op;
  const Trace t = trace_of(yaml);
  REQUIRE(t.after.size() == 2);
  std::vector<int> workers(static_cast<std::size_t>(p - servers));
  std::iota(workers.begin(), workers.end(), servers);
  for (std::size_t step = 0; step < t.after.size(); ++step) {
    const Eigen::VectorXd expected =
        direct_reduction(inputs_of(t, static_cast<int>(step), workers), reduce_op);
    const double tol = summation_tolerance(p, expected.cwiseAbs().maxCoeff());
    const auto& first = t.after[step][static_cast<std::size_t>(servers)];
    for (int w : workers) {
      const auto& out = t.after[step][static_cast<std::size_t>(w)];
      CHECK(max_abs_diff(out, expected) <= tol);
      CHECK((out - first).cwiseAbs().maxCoeff() == 0.0f);
    }
    Eigen::VectorXf served = Eigen::VectorXf::Zero(first.size());
    for (int s = 0; s < servers; ++s) {
      const auto& out = t.after[step][static_cast<std::size_t>(s)];
      CHECK((out.array() == 0.0f || out.array() == first.array()).all());
      served += out;
      if (scope == Scope::model) {
        const Range shard = chunk_range(out.size(), servers, s);
        CHECK((out.segment(shard.begin, shard.count) - first.segment(shard.begin, shard.count))
                  .cwiseAbs()
                  .maxCoeff() == 0.0f);
      }
    }
    CHECK((served - first).cwiseAbs().maxCoeff() == 0.0f);
  }
}

}  // namespace

// One dedicated server: every op, every p it accepts, by model and by layer; several shards: fewer.
TEST_CASE("dedicated parameter server reduces the workers' inputs only", "[ps][math]") {
  for (Scope scope : {Scope::model, Scope::layer}) {
    for (const std::string& op : kIdentityOps)
      for (int p : kIdentityRanks)
        if (p > 1) check_dedicated(p, 1, op, scope);
    for (const std::string op : {"avg", "min"})
      for (int p : {3, 5, 13}) check_dedicated(p, 2, op, scope);
    for (const std::string op : {"sum", "custom_avg, denominator: 2.5"})
      for (int p : {5, 64}) check_dedicated(p, 3, op, scope);
  }
}

// Synchronous, S = 1, colocated on a cluster: W-1 pushes of S bytes share the server's down link,
// then W-1 pulls share its up link: 2 (alpha + (p-1) S / beta).
TEST_CASE("synchronous parameter server step time equals its alpha-beta closed form", "[ps][formula]") {
  const double alpha = 2e-6, beta = 1.25e9, size = 1e6;
  for (int p : {2, 5, 8}) {
    INFO("p " << p);
    const auto times = step_times(ps_scenario(p, cluster(p), "op: avg", 2, "alpha_beta", "1000000B", 16));
    for (double t : times) CHECK(t == Approx(2 * (alpha + (p - 1) * size / beta)).epsilon(1e-9));
  }
  // S shards colocated on 6 ranks: server s receives 5 pushes of size/S and sends 5 pulls, while
  // each rank also uploads S-1 shards; with S = 6 (all-to-all) every link carries 5 shards each way.
  const auto times =
      step_times(ps_scenario(6, cluster(6), "op: avg, servers: 6", 1, "alpha_beta", "1200000B", 16));
  CHECK(times.at(0) == Approx(2 * (alpha + 5 * (size * 1.2 / 6) / beta)).epsilon(1e-9));
}

// Dedicated, S servers and W = p - S workers on a cluster. Push: every worker sends one shard of
// size/S to each server at once; all W S flows are equal, a worker's up-link carries S of them and
// a server's down-link W, so each flows at beta / max(W, S) and all end together:
// alpha + max(W, S) (size/S) / beta. The pull is the mirror image (W flows leave each server, S
// reach each worker): the step costs 2 (alpha + max(W, S) size / (S beta)).
TEST_CASE("dedicated parameter server step time equals its alpha-beta closed form", "[ps][formula]") {
  const double alpha = 2e-6, beta = 1.25e9, size = 1.2e6;
  for (const auto& [p, servers] :
       std::vector<std::pair<int, int>>{{2, 1}, {5, 1}, {8, 1}, {8, 2}, {5, 3}, {6, 3}}) {
    const int workers = p - servers;
    INFO("p " << p << ", servers " << servers);
    const auto times =
        step_times(ps_scenario(p, cluster(p), fmt::format("servers: {}, placement: dedicated", servers), 2,
                               "alpha_beta", "1200000B", 16));
    for (double t : times)
      CHECK(t == Approx(2 * (alpha + std::max(workers, servers) * size / servers / beta)).epsilon(1e-9));
  }
}

// One dedicated server (host-0, 10 Gb/s links) and five workers whose uploads run at different
// rates summing below the server's 10 Gb/s download, so each push of B bytes flows at its own
// upload rate: it arrives at 2 us + B / up_i. The server reduces the first k, then its five pulls
// share its 10 Gb/s upload: every rank ends at t_(k) + 2 us + 5 B / 1.25e9.
TEST_CASE("k-of-n step time is the k-th arrival plus the pull, and workers hold the server's model",
          "[ps][k-of-n]") {
  const std::vector<double> up_gbps = {10, 0.8, 2.4, 1.2, 3.2, 1.6};
  const std::string platform = platform_file(straggler_platform(up_gbps));
  const double bytes = 1e6, alpha = 2e-6, pull = alpha + 5 * bytes / 1.25e9;
  std::vector<std::pair<double, int>> arrivals;  // (time, rank)
  for (int r = 1; r <= 5; ++r)
    arrivals.emplace_back(alpha + bytes / (up_gbps[static_cast<std::size_t>(r)] * 1e9 / 8), r);
  std::sort(arrivals.begin(), arrivals.end());
  for (int k = 1; k <= 5; ++k) {
    INFO("k " << k);
    const Trace t =
        trace_of(ps_scenario(6, platform, fmt::format("op: avg, placement: dedicated, aggregate: {}", k), 1,
                             "alpha_beta", "1000000B", 64));
    CHECK(t.step_times.at(0) == Approx(arrivals[static_cast<std::size_t>(k - 1)].first + pull).epsilon(1e-9));
    // The server's model is the mean of the k fastest workers' gradients; every worker pulled it.
    std::vector<int> fastest;
    for (int i = 0; i < k; ++i) fastest.push_back(arrivals[static_cast<std::size_t>(i)].second);
    ReduceOp avg;
    const Eigen::VectorXd expected = direct_reduction(inputs_of(t, 0, fastest), avg);
    const Eigen::VectorXf& server = t.after[0][0];
    CHECK(max_abs_diff(server, expected) <= summation_tolerance(k, expected.cwiseAbs().maxCoeff()));
    for (int r = 1; r <= 5; ++r)
      CHECK((t.after[0][static_cast<std::size_t>(r)] - server).cwiseAbs().maxCoeff() == 0.0f);
    CHECK(t.stats.discarded_pushes == static_cast<std::uint64_t>(5 - k));
  }
}

// Stragglers from the compute model: one 1 MB layer of F forward FLOPs (2F backward) per sample,
// batch 1, on 100 Gf hosts; rank r computes c_r = 3F / (f_r 1e11) with speed factor f_r. The
// dedicated server (f = 100) is listening long before the first worker pushes. Workers finish
// computing 10 ms apart, more than any transfer here, so each push crosses idle 10 Gb/s links:
// it arrives at a_r = c_r + 2 us + B / 1.25e9. The server reduces the first k and sends the pull;
// only the k fastest workers have posted theirs (the others are still computing), so k pulls share
// its up link: each of the k fastest ends at a_(k) + 2 us + k B / 1.25e9. A slower worker's pull
// waits for it and then flows alone: it ends at c_r + 2 us + B / 1.25e9.
TEST_CASE("k-of-n with compute stragglers: the fast workers end at the k-th arrival plus the pull",
          "[ps][k-of-n]") {
  const auto dir = fresh_dir("ps-compute");
  const double flops = 4e9, bytes = 1e6, alpha = 2e-6, beta = 1.25e9;
  write_file(
      dir / "layers.yaml",
      fmt::format("name: one_layer\nlayers:\n  - {{name: fc, shape: [250000], forward_flops: {}}}\n", flops));
  const std::vector<double> speed = {100, 12, 4, 6, 2.4, 3};  // workers compute 10, 30, 20, 50, 40 ms
  std::vector<double> compute, arrival;
  for (double f : speed) {
    compute.push_back(3 * flops / (f * 1e11));
    arrival.push_back(compute.back() + alpha + bytes / beta);
  }
  std::vector<int> order = {1, 2, 3, 4, 5};  // workers by arrival
  std::sort(order.begin(), order.end(), [&](int a, int b) {
    return arrival[static_cast<std::size_t>(a)] < arrival[static_cast<std::size_t>(b)];
  });
  const std::string platform = platform_file(straggler_platform({10, 10, 10, 10, 10, 10}));
  for (int k = 1; k <= 5; ++k) {
    INFO("k " << k);
    const std::string yaml = fmt::format(R"(
seed: 5
ranks: 6
steps: 1
platform: {}
network: alpha_beta
model: {{layers: {}, batch: 1, proxy_dim: 64}}
algorithm: {{name: parameter_server, op: avg, placement: dedicated, aggregate: {}}}
compute: {{speed_factors: [{}], reduce_speed: 0}}
)",
                                         platform, (dir / "layers.yaml").string(), k, fmt::join(speed, ", "));
    const Trace t = trace_of(yaml);
    const double kth = arrival[static_cast<std::size_t>(order[static_cast<std::size_t>(k - 1)])];
    for (int i = 0; i < 5; ++i) {
      const int r = order[static_cast<std::size_t>(i)];
      const double expected = i < k ? kth + alpha + k * bytes / beta
                                    : compute[static_cast<std::size_t>(r)] + alpha + bytes / beta;
      INFO("worker " << r);
      CHECK(t.end[0][static_cast<std::size_t>(r)] == Approx(expected).epsilon(1e-9));
      CHECK((t.after[0][static_cast<std::size_t>(r)] - t.after[0][0]).cwiseAbs().maxCoeff() == 0.0f);
    }
    CHECK(t.stats.discarded_pushes == static_cast<std::uint64_t>(5 - k));
  }
}

// server_hosts puts the servers on named hosts. Host-3 (one server) or hosts 4 and 1 (two) have
// 40 Gb/s links, all others 10 Gb/s. One server on host-3: five 1 MB pushes share its 40 Gb/s down
// link (8 Gb/s each, below the workers' 10 Gb/s), then five pulls share its up link: 2 (alpha +
// 5 B / 5e9). Two servers on hosts 4 and 1: each of the four workers sends two B/2 shards through
// its 10 Gb/s up link (5 Gb/s each; a server's 40 Gb/s takes four), and likewise for the pulls:
// 2 (alpha + B / 1.25e9). Without server_hosts the one server sits on host-0 at 10 Gb/s:
// 2 (alpha + 5 B / 1.25e9). The hook also reads each rank's host.
TEST_CASE("server_hosts places the parameter servers on the named hosts", "[ps][placement]") {
  const double bytes = 1e6, alpha = 2e-6, beta = 1.25e9;
  const auto hosts_and_time = [](const std::string& yaml) {
    const std::string text = run_isolated([&] {
      const Scenario sc = load_scenario_text(yaml, "test.yaml");
      std::vector<std::string> host(static_cast<std::size_t>(sc.ranks));
      SimulationHooks hooks;
      hooks.after_aggregate = [&](int rank, int, const Eigen::VectorXf&, const Eigen::VectorXf&) {
        host[static_cast<std::size_t>(rank)] = simgrid::s4u::this_actor::get_host()->get_name();
      };
      const auto result = simulate(sc, {}, hooks);
      return fmt::format("{:.17g} {}", summarize_steps(result.log).at(0).step_time_s, fmt::join(host, " "));
    });
    std::istringstream in(text);
    double time = 0;
    in >> time;
    std::vector<std::string> host;
    for (std::string h; in >> h;) host.push_back(h);
    return std::make_pair(time, host);
  };
  {
    const std::string platform =
        platform_file(star_platform({10, 10, 10, 40, 10, 10}, {10, 10, 10, 40, 10, 10}));
    const auto pinned = hosts_and_time(ps_scenario(
        6, platform, "op: avg, placement: dedicated, server_hosts: host-3", 1, "alpha_beta", "1000000B", 64));
    CHECK(pinned.first == Approx(2 * (alpha + 5 * bytes / (4 * beta))).epsilon(1e-9));
    CHECK(pinned.second ==
          std::vector<std::string>{"host-3", "host-0", "host-1", "host-2", "host-4", "host-5"});
    const auto natural = hosts_and_time(
        ps_scenario(6, platform, "op: avg, placement: dedicated", 1, "alpha_beta", "1000000B", 64));
    CHECK(natural.first == Approx(2 * (alpha + 5 * bytes / beta)).epsilon(1e-9));
    CHECK(natural.second ==
          std::vector<std::string>{"host-0", "host-1", "host-2", "host-3", "host-4", "host-5"});
  }
  {
    const std::string platform =
        platform_file(star_platform({10, 40, 10, 10, 40, 10}, {10, 40, 10, 10, 40, 10}));
    const auto pinned = hosts_and_time(ps_scenario(6, platform,
                                                   "op: avg, servers: 2, placement: dedicated, server_hosts: "
                                                   "'host-4, host-1'",
                                                   1, "alpha_beta", "1000000B", 64));
    CHECK(pinned.first == Approx(2 * (alpha + bytes / beta)).epsilon(1e-9));
    CHECK(pinned.second ==
          std::vector<std::string>{"host-4", "host-1", "host-0", "host-2", "host-3", "host-5"});
  }
}

TEST_CASE("server_hosts is checked: names, count, and room for the other ranks", "[ps][placement]") {
  const std::string platform = platform_file(straggler_platform({10, 10, 10, 10}));
  const auto error_of = [&](int ranks, const std::string& options) {
    const std::string yaml = ps_scenario(ranks, platform, "placement: dedicated, " + options, 1);
    return run_isolated([&] {
      try {
        const Scenario sc = load_scenario_text(yaml, "ps.yaml");
        check_platform(sc, {});
      } catch (const std::exception& e) {
        return std::string(e.what());
      }
      return std::string("no error");
    });
  };
  // Found when the scenario loads: file:line:col of the key.
  CHECK_THAT(error_of(4, "servers: 2, server_hosts: 'host-1, host-1'"), Catch::StartsWith("ps.yaml:8:") &&
                                                                            Catch::Contains("server_hosts") &&
                                                                            Catch::Contains("named twice"));
  CHECK_THAT(error_of(4, "servers: 2, server_hosts: host-1"),
             Catch::StartsWith("ps.yaml:8:") && Catch::Contains("server_hosts") &&
                 Catch::Contains("1 host names for 2 servers"));
  CHECK_THAT(error_of(4, "servers: 1, server_hosts: 'host-1,'"), Catch::StartsWith("ps.yaml:8:") &&
                                                                     Catch::Contains("server_hosts") &&
                                                                     Catch::Contains("empty host name"));
  // Found when the platform is built (aggsim validate and run), still at the key's line.
  CHECK_THAT(
      error_of(4, "servers: 1, server_hosts: host-9"),
      Catch::StartsWith("ps.yaml:8:") && Catch::Contains(": algorithm.server_hosts: no host 'host-9'"));
  CHECK_THAT(error_of(5, "servers: 1, server_hosts: host-2"),
             Catch::StartsWith("ps.yaml:8:") && Catch::Contains(": algorithm.server_hosts:") &&
                 Catch::Contains("the 4 other ranks do not fit on the 3 hosts"));
  CHECK(error_of(4, "servers: 2, server_hosts: 'host-2,host-0'") == "no error");
}

TEST_CASE("k-of-n over several steps drops late pushes and ends cleanly", "[ps][k-of-n]") {
  const std::string platform = platform_file(straggler_platform({10, 0.8, 2.4, 1.2, 3.2, 1.6}));
  const Trace t = trace_of(ps_scenario(6, platform, "op: sum, placement: dedicated, aggregate: 3", 4));
  CHECK(t.step_times.size() == 4);
  CHECK(t.stats.discarded_pushes == 4 * 2);
  // 4 steps x (5 pushes + 5 pulls), every one received (an unreceived send would not return).
  CHECK(t.messages == 4 * 10);
  for (const auto& step : t.after)
    for (int r = 1; r <= 5; ++r)
      CHECK((step[static_cast<std::size_t>(r)] - step[0]).cwiseAbs().maxCoeff() == 0.0f);
}

// Asynchronous with a slow worker. The bound: when worker w's pull of step s returns, every
// worker's push of step s - tau has been applied, and that push was sent only after its step
// s - tau - 1 had returned. So end(u, s - tau - 1) <= end(w, s) for all u, w: checked from the
// hook's clock, independent of the server's own bookkeeping; and without a bound it fails.
TEST_CASE("asynchronous parameter server keeps every worker within tau versions", "[ps][async]") {
  const std::string platform = platform_file(straggler_platform({10, 10, 10, 10, 1, 10}));
  const int steps = 8;
  const auto violations = [&](const Trace& t, int tau) {
    int bad = 0;
    for (int s = tau + 1; s < steps; ++s)
      for (int w = 1; w <= 5; ++w)
        for (int u = 1; u <= 5; ++u)
          if (t.end[static_cast<std::size_t>(s - tau - 1)][static_cast<std::size_t>(u)] >
              t.end[static_cast<std::size_t>(s)][static_cast<std::size_t>(w)] + 1e-12)
            ++bad;
    return bad;
  };
  for (const std::string placement : {"dedicated", "colocated"}) {
    for (int tau : {0, 1, 2}) {
      INFO(placement << ", tau " << tau);
      const Trace t = trace_of(ps_scenario(
          6, platform,
          fmt::format("op: sum, asynchronous: true, staleness: {}, placement: {}", tau, placement), steps,
          "alpha_beta", "1MB", 32));
      CHECK(violations(t, tau) == 0);
      CHECK(t.stats.max_staleness == tau);  // the straggler makes the bound bind
      CHECK(t.stats.deferred_pulls > 0);
      // Every push answered and every last word received: W steps of pushes + replies + 1 each.
      const int workers = placement == "dedicated" ? 5 : 6;
      const int remote = placement == "dedicated" ? workers : workers - 1;
      CHECK(t.messages == static_cast<std::uint64_t>(remote * (2 * steps + 1)));
      // Summed over steps, the deltas a worker pulled are the updates applied before its last
      // pull; the last worker to pull has seen every update of every worker.
      Eigen::VectorXd all = Eigen::VectorXd::Zero(32);
      for (int s = 0; s < steps; ++s)
        for (int w = 6 - workers; w < 6; ++w)
          all += t.before[static_cast<std::size_t>(s)][static_cast<std::size_t>(w)].cast<double>();
      double best = 1e300;
      for (int w = 6 - workers; w < 6; ++w) {
        Eigen::VectorXd pulled = Eigen::VectorXd::Zero(32);
        for (int s = 0; s < steps; ++s)
          pulled += t.after[static_cast<std::size_t>(s)][static_cast<std::size_t>(w)].cast<double>();
        best = std::min(best, (pulled - all).cwiseAbs().maxCoeff());
      }
      CHECK(best <= summation_tolerance(workers * steps, all.cwiseAbs().maxCoeff()));
    }
  }
  // Without a binding bound the fast workers run ahead of the straggler: the check above can fail.
  const Trace loose =
      trace_of(ps_scenario(6, platform, "op: sum, asynchronous: true, staleness: 100, placement: dedicated",
                           steps, "alpha_beta", "1MB", 32));
  CHECK(violations(loose, 1) > 0);
  CHECK(loose.stats.deferred_pulls == 0);
}

TEST_CASE("parameter server options are checked against the ranks", "[ps]") {
  const auto fails = [](const std::string& yaml) {
    try {
      trace_of(yaml);
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK_THAT(fails(ps_scenario(3, cluster(3), "servers: 3, placement: dedicated")),
             Catch::Contains("no worker"));
  CHECK_THAT(fails(ps_scenario(3, cluster(3), "aggregate: 4")), Catch::Contains("exceeds the 3 workers"));
  CHECK_THAT(fails(ps_scenario(3, cluster(3), "aggregate: 2, asynchronous: true")),
             Catch::Contains("synchronous"));
}

// Top-k is not summable: workers encode each shard, the server decodes every push and averages.
// Expected: the mean over ranks of each rank's own top-k per shard (k = 10 % of the shard).
TEST_CASE("parameter server carries a non-summable compressor (top-k) per shard", "[ps][compression]") {
  const int p = 5, dim = 1000;
  for (int servers : {1, 2, 3}) {
    INFO("servers " << servers);
    const Trace t = trace_of(ps_scenario(p, cluster(p), fmt::format("op: avg, servers: {}", servers), 2,
                                         "alpha_beta", "1MB", dim) +
                             "compression: {name: topk, ratio: 0.1}\n");
    for (std::size_t step = 0; step < t.after.size(); ++step) {
      Eigen::VectorXd expected = Eigen::VectorXd::Zero(dim);
      for (int r = 0; r < p; ++r) {
        const Eigen::VectorXf& x = t.before[step][static_cast<std::size_t>(r)];
        for (int s = 0; s < servers; ++s) {
          const Range shard = chunk_range(dim, servers, s);
          std::vector<Eigen::Index> order(static_cast<std::size_t>(shard.count));
          std::iota(order.begin(), order.end(), shard.begin);
          std::sort(order.begin(), order.end(),
                    [&](auto a, auto b) { return std::abs(x[a]) > std::abs(x[b]); });
          const auto keep = static_cast<std::size_t>(std::llround(0.1 * static_cast<double>(shard.count)));
          for (std::size_t i = 0; i < keep; ++i) expected[order[i]] += x[order[i]] / static_cast<double>(p);
        }
      }
      for (int r = 0; r < p; ++r) {
        CHECK(max_abs_diff(t.after[step][static_cast<std::size_t>(r)], expected) <=
              summation_tolerance(p, 4.0));
        CHECK((t.after[step][static_cast<std::size_t>(r)] - t.after[step][0]).cwiseAbs().maxCoeff() == 0.0f);
      }
    }
  }
}
