// Parameter server with `pull: broadcast`: the pull phase against the binomial-broadcast closed form
// under alpha_beta, the bytes the server sends against the tree, and every rank's vector against
// the same run with `pull: unicast`.
//
// Cluster of p hosts, 10 Gb/s, 1 us per private link: one message of m bytes costs alpha + m/beta
// (alpha = 2 us, beta = 1.25e9 B/s) when its links are free. The push phase is the unicast server's
// (the W remote pushes share the server's down link: alpha + W S / beta). The pull tree has m
// members (the server and the workers other than itself); the root sends to its ceil(log2 m)
// children one after the other (blocking sends), largest subtree first, and each child's subtree
// completes within the rounds left, so the pull takes ceil(log2 m) (alpha + S/beta); unicast pulls
// share the server's up link: alpha + W S / beta.
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "alpha_beta.hpp"
#include "support/cli.hpp"
#include "support/reduction_check.hpp"
#include "support/refusal.hpp"
#include "support/simulate_capturing.hpp"

using namespace aggsim;
using namespace aggsim::test;

namespace {

std::string ps_scenario(int p, const std::string& options, const std::string& size, int steps = 2,
                        const std::string& extra = "") {
  return fmt::format(R"(
seed: 13
ranks: {p}
steps: {steps}
platform: {{topology: cluster, hosts: {p}, bandwidth: 10Gbps, latency: 1us}}
network: alpha_beta
model: {{size: {size}, proxy_dim: 97}}
algorithm: {{name: parameter_server, op: avg, {options}}}
compute: {{reduce_speed: 0}}
{extra}
)",
                     fmt::arg("p", p), fmt::arg("steps", steps), fmt::arg("size", size),
                     fmt::arg("options", options), fmt::arg("extra", extra));
}

// Bytes each rank sent in step 0.
std::vector<std::uint64_t> bytes_by_rank(const std::string& yaml) {
  const std::string text = run_isolated([&] {
    const Scenario sc = load_scenario_text(yaml, "test.yaml");
    const auto result = simulate(sc, {}, {});
    std::string out;
    for (int r = 0; r < sc.ranks; ++r) out += fmt::format("{} ", result.log.at(r, 0).bytes_sent);
    return out;
  });
  std::istringstream in(text);
  std::vector<std::uint64_t> bytes;
  for (std::uint64_t b; in >> b;) bytes.push_back(b);
  if (bytes.empty()) throw std::runtime_error("no bytes: " + text);
  return bytes;
}

// Every rank's vector after every step, as text with all the bits (hex floats).
std::string vectors_after(const std::string& yaml) {
  return run_isolated([&] {
    const Captured run = simulate_capturing(load_scenario_text(yaml, "test.yaml"));
    std::string out;
    for (const auto& [step, ranks] : run.after)
      for (std::size_t r = 0; r < ranks.size(); ++r) {
        out += fmt::format("{} {}:", step, r);
        for (float x : ranks[r]) out += fmt::format(" {:a}", x);
        out += "\n";
      }
    return out;
  });
}

int ceil_log2_int(int m) {
  int rounds = 0;
  while ((1 << rounds) < m) ++rounds;
  return rounds;
}

}  // namespace

TEST_CASE("broadcast pull takes ceil(log2 m) transfers, unicast W through the server link",
          "[ps][broadcast][formula]") {
  const double size = 1e6;
  for (const bool dedicated : {false, true})
    for (int workers : {1, 2, 4, 5, 7, 8}) {
      const int p = dedicated ? workers + 1 : workers;
      if (p < 2) continue;
      const int remote = dedicated ? workers : workers - 1;  // workers the server does not hold
      const int members = remote + 1;                        // the pull tree: server + remote workers
      const std::string placement = dedicated ? "placement: dedicated" : "placement: colocated";
      INFO((dedicated ? "dedicated" : "colocated") << ", " << workers << " workers");
      const double push = kAlpha + remote * size / kBeta;
      const double unicast = kAlpha + remote * size / kBeta;
      const double broadcast = ceil_log2_int(members) * (kAlpha + size / kBeta);
      for (const std::string math : {"on", "off"}) {
        INFO("math " << math);
        const auto u =
            step_times(ps_scenario(p, placement + ", pull: unicast", "1000000B"), {"model.math=" + math});
        const auto b =
            step_times(ps_scenario(p, placement + ", pull: broadcast", "1000000B"), {"model.math=" + math});
        for (double t : u) CHECK(t == Approx(push + unicast).epsilon(1e-9));
        for (double t : b) CHECK(t == Approx(push + broadcast).epsilon(1e-9));
      }
    }
}

// The root of a tree of m members sends ceil(log2 m) copies of its shard; relative rank r forwards
// to r + 2^k for 2^k below r's lowest set bit; every member but the root receives exactly one copy.
TEST_CASE("broadcast pull: the server sends one copy per tree child, workers forward the rest",
          "[ps][broadcast][bytes]") {
  const std::uint64_t size = 1200000;
  SECTION("one colocated server") {
    for (int p : {2, 3, 6, 8, 11}) {
      INFO("p " << p);
      const auto b = bytes_by_rank(ps_scenario(p, "pull: broadcast", "1200000B", 1));
      const auto u = bytes_by_rank(ps_scenario(p, "pull: unicast", "1200000B", 1));
      CHECK(b.at(0) == static_cast<std::uint64_t>(ceil_log2_int(p)) * size);
      CHECK(u.at(0) == static_cast<std::uint64_t>(p - 1) * size);
      // Worker r (relative rank r in the tree) pushes S and forwards to its children.
      std::uint64_t total = 0;
      for (int r = 1; r < p; ++r) {
        int children = 0;
        for (int mask = 1; mask < (r & -r); mask <<= 1)
          if (r + mask < p) ++children;
        CHECK(b.at(static_cast<std::size_t>(r)) == size * static_cast<std::uint64_t>(1 + children));
        total += b.at(static_cast<std::size_t>(r));
      }
      // The same bytes cross the network in all: p-1 pushes and p-1 pull copies.
      CHECK(total + b.at(0) == 2 * static_cast<std::uint64_t>(p - 1) * size);
    }
  }
  SECTION("two dedicated servers: one tree per shard") {
    // 5 workers: each tree has 6 members, so each server sends ceil(log2 6) = 3 copies of S/2.
    const auto b =
        bytes_by_rank(ps_scenario(7, "servers: 2, placement: dedicated, pull: broadcast", "1200000B", 1));
    CHECK(b.at(0) == 3 * size / 2);
    CHECK(b.at(1) == 3 * size / 2);
    const auto u =
        bytes_by_rank(ps_scenario(7, "servers: 2, placement: dedicated, pull: unicast", "1200000B", 1));
    CHECK(u.at(0) == 5 * size / 2);
  }
}

// The server reduces its pushes in arrival order. Step 0's pushes arrive in the same order either
// way, so every rank's vector is bit-identical. With one tree per shard the workers leave the pull
// at different times (unicast pulls all end together), so the next step's pushes may reach a
// server in another order: the same gradients summed in another order, equal to within rounding.
TEST_CASE("broadcast pull leaves every rank with exactly the unicast pull's vector",
          "[ps][broadcast][math]") {
  struct Case {
    std::string options, extra;
    bool same_order_every_step;
  };
  const std::vector<Case> cases = {
      {"servers: 1", "", true},
      {"servers: 1, placement: dedicated", "compression: {name: qsgd, levels: 16}", true},
      {"servers: 2", "", true},
      {"servers: 2, aggregate: 3", "", true},
      {"servers: 2", "compression: {name: topk, ratio: 0.1}", true},
      {"servers: 3, placement: dedicated", "", false},
  };
  for (const auto& c : cases)
    for (int p : {5, 8}) {
      INFO(c.options << " " << c.extra << ", p " << p);
      const std::string unicast =
          vectors_after(ps_scenario(p, c.options + ", pull: unicast", "1MB", 3, c.extra));
      const std::string broadcast =
          vectors_after(ps_scenario(p, c.options + ", pull: broadcast", "1MB", 3, c.extra));
      std::istringstream a(unicast), b(broadcast);
      int lines = 0;
      for (std::string la, lb; std::getline(a, la) && std::getline(b, lb); ++lines) {
        INFO(la.substr(0, 12));
        if (c.same_order_every_step || la.rfind("0 ", 0) == 0) {
          CHECK(lb == la);
          continue;
        }
        std::istringstream xa(la.substr(la.find(':') + 1)), xb(lb.substr(lb.find(':') + 1));
        double worst = 0, scale = 0;
        for (std::string ta, tb; xa >> ta && xb >> tb;) {
          const double va = std::strtod(ta.c_str(), nullptr), vb = std::strtod(tb.c_str(), nullptr);
          worst = std::max(worst, std::abs(va - vb));
          scale = std::max(scale, std::abs(va));
        }
        CHECK(worst <= summation_tolerance(p, scale));
      }
      CHECK(lines == 3 * p);
    }
}

TEST_CASE("pull is checked: its choices, and broadcast refused with the asynchronous server",
          "[ps][broadcast][input]") {
  struct Bad {
    std::string options, expected;
  };
  const std::vector<Bad> cases = {
      {"pull: multicast", "bad.yaml:8:52: algorithm.pull: must be one of unicast | broadcast"},
      {"asynchronous: true, pull: broadcast",
       "algorithm.pull: parameter_server: pull: broadcast needs the synchronous"},
  };
  for (const auto& c : cases) check_refused(ps_scenario(4, c.options, "1MB"), {c.expected});
  // The synchronous unicast default still runs.
  const auto dir = fresh_dir("ps-pull");
  write_file(dir / "good.yaml", ps_scenario(4, "pull: broadcast", "1MB"));
  const auto r = run_aggsim({"validate", "good.yaml"}, dir);
  INFO(r.err);
  CHECK(r.exit_code == 0);
}
