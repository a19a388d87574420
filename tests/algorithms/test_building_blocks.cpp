// The collective building blocks called directly on groups with roots other than rank 0: binomial
// reduce / broadcast / gather, recursive halving reduce-scatter, recursive doubling all-gather.
// Each check runs its own small simulation (one actor per rank) on the formula cluster.
#include <functional>
#include <simgrid/s4u.hpp>
#include <sstream>

#include "algorithms/collectives/blocks.hpp"
#include "alpha_beta.hpp"
#include "sim/engine/simulation.hpp"
#include "sim/platform/platform.hpp"
#include "sim/platform/topology.hpp"

using namespace aggsim;
using namespace aggsim::test;

namespace {

namespace sg4 = simgrid::s4u;

// Rank r's input: element i is 1000 r + i (exact in fp32 for the sizes used).
Eigen::VectorXf input_of(int r, int n) {
  Eigen::VectorXf v(n);
  for (int i = 0; i < n; ++i) v[i] = static_cast<float>(1000 * r + i);
  return v;
}

struct BlockRun {
  std::vector<Eigen::VectorXf> out;  // by rank
  double time = 0;                   // when the last rank finished
};

// Runs `block` on every rank of a p-host cluster (alpha-beta), each starting with input_of(r) and
// modeled size `bytes`; returns what every rank holds afterwards.
BlockRun run_block(int p, int proxy_dim, double bytes,
                   const std::function<void(Comm&, const Group&, Gradient&)>& block) {
  const std::string text = run_isolated([&] {
    std::vector<std::string> args = {"blocks", "--log=xbt_cfg.thres:warning", "--cfg=contexts/factory:raw"};
    for (const auto& c : network_preset_config(NetworkPreset::alpha_beta)) args.push_back("--cfg=" + c);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    int argc = static_cast<int>(argv.size());
    sg4::Engine engine(&argc, argv.data());
    PlatformSpec spec;
    spec.topology = "cluster";
    spec.generator = find_topology("cluster");
    spec.params = default_params(spec.generator->params);
    spec.params.set("hosts", std::int64_t{p});
    spec.params.set("bandwidth", 1.25e9);
    spec.params.set("latency", 1e-6);
    spec.params.set("speed", 1e11);
    decode_generated_platform(spec);
    build_platform(spec, engine);
    const auto hosts = hosts_in_natural_order(engine);
    std::vector<Eigen::VectorXf> out(static_cast<std::size_t>(p));
    double end = 0;
    for (int r = 0; r < p; ++r)
      sg4::Actor::create("rank", hosts[static_cast<std::size_t>(r)], [&, r] {
        Comm comm(r, p);
        const Group group = Group::strided(0, 1, p, r);
        Gradient g = flat_gradient(input_of(r, proxy_dim), static_cast<std::uint64_t>(bytes / 4));
        block(comm, group, g);
        out[static_cast<std::size_t>(r)] = g.values;
        end = std::max(end, sg4::Engine::get_clock());
      });
    engine.run();
    std::ostringstream s;
    s.precision(17);
    s << end;
    for (const auto& v : out)
      for (float x : v) s << ' ' << x;
    return s.str();
  });
  std::istringstream in(text);
  BlockRun run;
  in >> run.time;
  run.out.assign(static_cast<std::size_t>(p), Eigen::VectorXf(proxy_dim));
  for (auto& v : run.out)
    for (int i = 0; i < proxy_dim; ++i) in >> v[i];
  if (!in) throw std::runtime_error("block run failed: " + text);
  return run;
}

Eigen::VectorXf sum_of_inputs(int p, int n) {
  Eigen::VectorXf s = Eigen::VectorXf::Zero(n);
  for (int r = 0; r < p; ++r) s += input_of(r, n);
  return s;
}

const ReduceOp kSum{ReduceKind::sum, 1.0};

}  // namespace

TEST_CASE("binomial reduce to any root, pipelined, costs chunks ceil(log2 p) transfers",
          "[blocks][formula]") {
  for (int p : {5, 8})
    for (int chunks : {1, 3}) {
      const int root = 3, dim = 101;
      INFO("p " << p << ", chunks " << chunks);
      const auto run = run_block(p, dim, kSmall * 3, [&](Comm& c, const Group& grp, Gradient& g) {
        binomial_reduce(c, grp, g, whole_of(g), kSum, root, chunks);
      });
      CHECK(run.out[root] == sum_of_inputs(p, dim));
      // Same schedule argument as tree_allreduce's reduce phase (see alpha_beta.hpp).
      CHECK(run.time == Approx(tree_cost(p, kSmall * 3, chunks) / 2).epsilon(1e-9));
    }
}

TEST_CASE("binomial broadcast from any root reaches every rank in chunks ceil(log2 p) transfers",
          "[blocks][formula]") {
  for (int p : {5, 8}) {
    const int root = 2, dim = 37, chunks = 2;
    const auto run = run_block(p, dim, kSmall, [&](Comm& c, const Group& grp, Gradient& g) {
      binomial_broadcast(c, grp, g, whole_of(g), root, chunks);
    });
    for (const auto& v : run.out) CHECK(v == input_of(root, dim));
    CHECK(run.time == Approx(tree_cost(p, kSmall, chunks) / 2).epsilon(1e-9));
  }
}

// Binomial gather on p = 2^k: round j forwards 2^j chunks of S/p: k alpha + (p-1)/p S/beta.
TEST_CASE("binomial gather collects chunk i of member i at any root", "[blocks][formula]") {
  for (int p : {5, 8}) {
    const int root = p - 2, dim = 103;
    const auto run = run_block(p, dim, kSmall, [&](Comm& c, const Group& grp, Gradient& g) {
      binomial_gather(c, grp, g, whole_of(g), root);
    });
    for (int i = 0; i < p; ++i) {
      const Range r = chunk_range(dim, p, i);
      CHECK(run.out[root].segment(r.begin, r.count) == input_of(i, dim).segment(r.begin, r.count));
    }
    if (power_of_two(p)) CHECK(run.time == Approx(3 * kAlpha + 7.0 / 8 * kSmall / kBeta).epsilon(1e-9));
  }
}

TEST_CASE("recursive halving reduce-scatter and doubling all-gather", "[blocks][formula]") {
  const int p = 8, dim = 99;
  const auto rs = run_block(p, dim, kSmall, [&](Comm& c, const Group& grp, Gradient& g) {
    halving_reduce_scatter(c, grp, g, whole_of(g), kSum);
  });
  const Eigen::VectorXf total = sum_of_inputs(p, dim);
  for (int i = 0; i < p; ++i) {
    const Range r = chunk_range(dim, p, i);
    CHECK(rs.out[i].segment(r.begin, r.count) == total.segment(r.begin, r.count));
  }
  // log2 p steps sending S/2, S/4, ...: 3 alpha + 7/8 S/beta.
  CHECK(rs.time == Approx(3 * kAlpha + 7.0 / 8 * kSmall / kBeta).epsilon(1e-9));
  const auto ag = run_block(p, dim, kSmall, [&](Comm& c, const Group& grp, Gradient& g) {
    doubling_allgather(c, grp, g, whole_of(g));
  });
  Eigen::VectorXf expected(dim);
  for (int i = 0; i < p; ++i) {
    const Range r = chunk_range(dim, p, i);
    expected.segment(r.begin, r.count) = input_of(i, dim).segment(r.begin, r.count);
  }
  for (const auto& v : ag.out) CHECK(v == expected);
  CHECK(ag.time == Approx(3 * kAlpha + 7.0 / 8 * kSmall / kBeta).epsilon(1e-9));
}
