// Hierarchical all-reduce on multi-GPU nodes: exact reductions, alpha-beta closed form on a platform
// with fast intra-node links and a shared, slower NIC per node, and the unequal-node error.
#include <filesystem>

#include "alpha_beta.hpp"
#include "support/cli.hpp"

using namespace aggsim::test;

namespace {

// Intra-node: each host has a private up and down link (100 GB/s, 0.5 us): alpha_i = 1 us.
// Inter-node: host up-link, the node's NIC up-link, the peer node's NIC down-link, host down-link:
// alpha_o = 0.5 + 2 + 2 + 0.5 = 5 us; the NIC (10 Gb/s per direction) is shared by the g ranks of
// the node, which all send their shard at the same moment: beta_o = 1.25e9 / g B/s each.
constexpr double kIntraBw = 100e9, kIntraLat = 0.5e-6, kNicBw = 1.25e9, kNicLat = 2e-6;

// Writes a SimGrid platform of `nodes` x `gpus` hosts (host property aggsim_node); `gpus_of` can
// make nodes unequal.
std::string multi_gpu_platform(const std::vector<int>& gpus_of) {
  std::string hosts, links, routes;
  std::vector<int> node_of;
  for (std::size_t n = 0; n < gpus_of.size(); ++n) {
    links += fmt::format(R"(<link id="nicup{0}" bandwidth="{1}Bps" latency="{2}s"/>)"
                         R"(<link id="nicdn{0}" bandwidth="{1}Bps" latency="{2}s"/>)",
                         n, kNicBw, kNicLat) +
             "\n";
    for (int g = 0; g < gpus_of[n]; ++g) node_of.push_back(static_cast<int>(n));
  }
  for (std::size_t h = 0; h < node_of.size(); ++h) {
    hosts += fmt::format(R"(<host id="h{}" speed="100Gf"><prop id="aggsim_node" value="{}"/></host>)", h,
                         node_of[h]) +
             "\n";
    links += fmt::format(R"(<link id="up{0}" bandwidth="{1}Bps" latency="{2}s"/>)"
                         R"(<link id="dn{0}" bandwidth="{1}Bps" latency="{2}s"/>)",
                         h, kIntraBw, kIntraLat) +
             "\n";
  }
  for (std::size_t a = 0; a < node_of.size(); ++a)
    for (std::size_t b = 0; b < node_of.size(); ++b) {
      if (a == b) continue;
      std::string path = fmt::format(R"(<link_ctn id="up{}"/>)", a);
      if (node_of[a] != node_of[b])
        path += fmt::format(R"(<link_ctn id="nicup{}"/><link_ctn id="nicdn{}"/>)", node_of[a], node_of[b]);
      path += fmt::format(R"(<link_ctn id="dn{}"/>)", b);
      routes += fmt::format(R"(<route src="h{}" dst="h{}" symmetrical="NO">{}</route>)", a, b, path) + "\n";
    }
  return "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
         "<platform version=\"4.1\">\n<zone id=\"nodes\" routing=\"Full\">\n" +
         hosts + links + routes + "</zone>\n</platform>\n";
}

// `model` is the scenario's model map; `algorithm` the algorithm map's keys after the op.
std::string node_scenario(const std::vector<int>& gpus_of, const std::string& algorithm,
                          const std::string& op, const std::string& model) {
  int p = 0;
  for (int g : gpus_of) p += g;
  const auto dir = fresh_dir("hier");
  write_file(dir / "nodes.xml", multi_gpu_platform(gpus_of));
  return fmt::format(R"(
seed: 5
ranks: {p}
steps: 2
platform: {{file: {file}}}
network: alpha_beta
model: {model}
algorithm: {{op: {op}, {alg}}}
compute: {{reduce_speed: 0}}
)",
                     fmt::arg("p", p), fmt::arg("file", (dir / "nodes.xml").string()),
                     fmt::arg("model", model), fmt::arg("op", op), fmt::arg("alg", algorithm));
}

const std::vector<std::string> kInter = {"ring", "halving_doubling",   "recursive_doubling",
                                         "tree", "double_binary_tree", "nccl"};

}  // namespace

TEST_CASE("hierarchical all-reduce gives every rank the exact reduction", "[hierarchical][math]") {
  // On a flat cluster every rank is its own node: the inter-node algorithm does everything.
  check_identity_math("name: hierarchical_allreduce");
  // Real nodes, every inter-node algorithm, by model and by layer: every op on 2 nodes of 4, avg and
  // max on the other layouts (p = 6, 9, 20).
  for (Scope scope : {Scope::model, Scope::layer})
    for (const auto& inter : kInter)
      for (const std::vector<int>& nodes : {std::vector<int>{4, 4}, {2, 2, 2}, {4, 4, 4, 4, 4}, {3, 3, 3}}) {
        const auto ops = nodes.size() == 2 ? kIdentityOps : std::vector<std::string>{"avg", "max"};
        for (const std::string& op : ops) {
          INFO("inter " << inter << ", " << nodes.size() << " nodes of " << nodes[0] << ", op " << op << ", "
                        << scope_name(scope));
          const auto e = check_reduction(node_scenario(
              nodes, fmt::format("{}, name: hierarchical_allreduce, inter: {}", scope_grouping(scope), inter),
              op, scope_model(scope)));
          CHECK(e.max_abs_error <= summation_tolerance(20, e.reference_scale));
          CHECK(e.max_rank_spread == 0.0);
        }
      }
}

// Intra-node ring reduce-scatter and all-gather on g ranks: 2 (g-1) (alpha_i + (S/g)/beta_i); in
// between, the g shards of S/g are all-reduced across the N nodes at once, each at a 1/g share of
// the NIC: the inter algorithm's own closed form with alpha_o, beta_o = NIC/g, S/g and N ranks.
TEST_CASE("hierarchical step time equals intra ring phases + the inter algorithm on S/g at NIC/g",
          "[hierarchical][formula]") {
  const double a_i = 2 * kIntraLat, a_o = 2 * kIntraLat + 2 * kNicLat;
  for (int nodes : {2, 3, 4})
    for (int g : {1, 4}) {
      const std::vector<int> layout(static_cast<std::size_t>(nodes), g);
      for (double S : {kSmall, kLarge}) {
        const double intra = 2.0 * (g - 1) * (a_i + S / g / kIntraBw), shard = S / g, b_o = kNicBw / g;
        const std::vector<std::pair<std::string, double>> cases = {
            {"ring", ring_cost(nodes, shard, a_o, b_o)},
            {"halving_doubling", halving_doubling_cost(nodes, shard, a_o, b_o)},
            {"recursive_doubling", recursive_doubling_cost(nodes, shard, a_o, b_o)},
            {"tree", tree_cost(nodes, shard, 1, a_o, b_o)},
            {"double_binary_tree", double_binary_tree_transfers(nodes, 1) * (a_o + shard / 2 / b_o)}};
        for (const auto& [inter, cost] : cases) {
          INFO(nodes << " nodes of " << g << ", inter " << inter << ", S " << S);
          const auto times = step_times(node_scenario(layout, "name: hierarchical_allreduce, inter: " + inter,
                                                      "avg", fmt::format("{{size: {}B, proxy_dim: 16}}", S)));
          for (double t : times) CHECK(t == Approx(intra + cost).epsilon(1e-9));
        }
      }
    }
}

// inter: nccl pipelines each shard's ring over NCCL's channels: on a large shard, where NCCL
// chooses ring and Simple (the full bandwidth), the stage takes the ring's bandwidth term
// 2 (N-1)/N x shard / beta_o, with the per-call base latency and pipeline fill below 1 % there.
TEST_CASE("hierarchical inter: nccl takes the ring's bandwidth time on large shards",
          "[hierarchical][formula][nccl]") {
  const double a_i = 2 * kIntraLat;
  for (int nodes : {2, 4}) {
    const int g = 4;
    const std::vector<int> layout(static_cast<std::size_t>(nodes), g);
    const auto time_of = [&](const std::string& inter, double S) {
      return step_times(node_scenario(layout, "name: hierarchical_allreduce, inter: " + inter, "avg",
                                      fmt::format("{{size: {}B, proxy_dim: 16}}", S)))
          .front();
    };
    const double large = 256e6, shard = large / g, b_o = kNicBw / g;
    const double intra = 2.0 * (g - 1) * (a_i + shard / kIntraBw);
    const double bandwidth_term = 2.0 * (nodes - 1) / nodes * shard / b_o;
    INFO(nodes << " nodes of " << g);
    CHECK(time_of("nccl", large) == Approx(intra + bandwidth_term).epsilon(0.02));
  }
}

TEST_CASE("hierarchical all-reduce rejects nodes with different rank counts, naming the layout",
          "[hierarchical]") {
  CHECK_THROWS_WITH(
      step_times(node_scenario({4, 3}, "name: hierarchical_allreduce", "avg", "{size: 1MB, proxy_dim: 16}")),
      Catch::Contains("same number of ranks on every node") &&
          Catch::Contains("node 0: 4 rank(s), node 1: 3 rank(s)"));
}
