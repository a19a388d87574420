// Impossible generator parameters and semantically wrong platform XML, through the real binary:
// each gives "file:line: message" naming the culprit, exit code 2, and no output folder (SimGrid
// 3.32 itself aborts, or silently builds another platform, on several of these).
#include <fmt/format.h>

#include <catch2/catch.hpp>

#include "support/cli.hpp"

using namespace aggsim::test;
namespace fs = std::filesystem;

namespace {

struct Case {
  std::string what;
  std::string scenario_or_platform;  // YAML platform mapping, or XML body inside <platform>
  std::string location;              // expected "file:line:" (file is the YAML or the XML)
  std::vector<std::string> fragments;
  std::vector<std::string> extra_args = {};
};

void expect_rejected(const fs::path& dir, const std::string& scenario, const Case& c) {
  INFO(c.what);
  const fs::path out = dir / "out";
  std::vector<std::string> args = {"run", scenario, "--out", out.string()};
  args.insert(args.end(), c.extra_args.begin(), c.extra_args.end());
  const CliResult r = run_aggsim(args);
  INFO(r.err);
  CHECK(r.exit_code == 2);
  CHECK(r.err.find(c.location) != std::string::npos);
  for (const auto& f : c.fragments) CHECK(r.err.find(f) != std::string::npos);
  CHECK_FALSE(fs::exists(out));
}

std::string scenario_text(const std::string& platform) {
  return "ranks: 2\nplatform: " + platform + "\nalgorithm: {name: ring_allreduce}\nmodel: {size: 1MB}\n";
}

}  // namespace

TEST_CASE("impossible generator parameters are file:line errors naming the key", "[platform][errors]") {
  const std::vector<Case> cases = {
      {"torus dimensions whose product is not the node count",
       "{topology: torus, nodes: 16, dimensions: [4, 3]}",
       ":2:",
       {"dimensions", "product is 12", "16 nodes"}},
      {"fat tree with fewer leaves than nodes",
       "{topology: fat_tree, nodes: 100, down: [8, 8]}",
       ":2:",
       {"down", "64 leaves"}},
      {"fat tree list of the wrong length",
       "{topology: fat_tree, nodes: 16, down: [4, 4], up: [1, 2, 2]}",
       ":2:",
       {"up", "3 entries", "2 levels"}},
      {"dragonfly shape given in part",
       "{topology: dragonfly, nodes: 16, groups: 2, routers: 2}",
       ":2:",
       {"chassis", "together"}},
      {"dragonfly with more groups than routers",
       "{topology: dragonfly, nodes: 16, groups: 4, chassis: 1, routers: 2, "
       "nodes_per_router: 2}",
       ":2:",
       {"groups", "routers"}},
      {"dragonfly with too few node slots",
       "{topology: dragonfly, nodes: 40, groups: 2, chassis: 2, routers: 2, "
       "nodes_per_router: 2}",
       ":2:",
       {"nodes_per_router", "16 node slots", "40 nodes"}},
      {"hosts not a multiple of gpus_per_node",
       "{topology: cluster, hosts: 10, gpus_per_node: 4}",
       ":2:",
       {"hosts", "gpus_per_node = 4"}},
      {"both nodes and hosts",
       "{topology: torus, nodes: 4, hosts: 8}",
       ":2:",
       {"nodes", "hosts", "not both"}},
      {"neither nodes nor hosts", "{topology: fat_tree, gpus_per_node: 2}", ":2:", {"nodes", "hosts"}},
      {"a reducing switch without multi-GPU nodes",
       "{topology: cluster, nodes: 4, nvswitch: true}",
       ":2:",
       {"nvswitch", "gpus_per_node > 1"}},
      {"more NICs than the generator builds",
       "{topology: cluster, nodes: 2, gpus_per_node: 2, nics_per_node: 65}",
       ":2:",
       {"nics_per_node"}},
      {"gpus_per_node out of range",
       "{topology: cluster, nodes: 2, gpus_per_node: 0}",
       ":2:",
       {"gpus_per_node"}},
      {"more multi-GPU nodes than the simulator builds in reasonable time",
       "{topology: cluster, nodes: 8193, gpus_per_node: 2}",
       ":2:",
       {"nodes", "8193 nodes x 2 GPUs", "at most 8192 nodes", "gpus_per_node: 1"}},
      {"more multi-GPU hosts than the simulator builds in reasonable time",
       "{topology: fat_tree, nodes: 4096, gpus_per_node: 32}",
       ":2:",
       {"nodes", "4096 nodes x 32 GPUs", "65536 hosts"}},
      {"ranks beyond the hosts of a multi-GPU platform",
       "{topology: cluster, nodes: 1, gpus_per_node: 1}",
       ":1:",
       {"ranks", "2 ranks do not fit on the 1 hosts"}},
  };
  for (const auto& c : cases) {
    const fs::path dir = fresh_dir("platform-yaml");
    const fs::path scenario = dir / "s.yaml";
    write_file(scenario, scenario_text(c.scenario_or_platform));
    expect_rejected(dir, scenario.string(),
                    {c.what, c.scenario_or_platform, scenario.string() + c.location, c.fragments});
    fs::remove_all(dir);
  }
}

TEST_CASE("network ns3 on a generator ns-3 cannot run is a load-time error", "[platform][errors][ns3]") {
  const fs::path dir = fresh_dir("platform-ns3");
  const fs::path scenario = dir / "s.yaml";
  write_file(scenario, scenario_text("{topology: torus, nodes: 8}") + "network: ns3\n");
  expect_rejected(dir, scenario.string(),
                  {"torus under ns3", "", scenario.string() + ":5:", {"network", "ns3", "torus"}});
  fs::remove_all(dir);
}

TEST_CASE("semantically wrong platform XML gets file:line instead of an abort", "[platform][errors][xml]") {
  const std::string hosts =
      "  <zone id=\"z\" routing=\"Full\">\n    <host id=\"a\" speed=\"1Gf\"/>\n"
      "    <host id=\"b\" speed=\"1Gf\"/>\n";
  // Line numbers: the XML header takes 3 lines, so the zone opens on line 4 and host b is on 6.
  const std::vector<Case> cases = {
      {"unknown element", hosts + "    <hots id=\"c\"/>\n  </zone>\n", ":7:", {"<hots>", "unknown element"}},
      {"unknown attribute",
       hosts + "    <host id=\"c\" speed=\"1Gf\" colour=\"red\"/>\n  </zone>\n",
       ":7:",
       {"colour"}},
      {"missing attribute", hosts + "    <host id=\"c\"/>\n  </zone>\n", ":7:", {"speed", "host"}},
      {"unknown routing",
       "  <zone id=\"z\" routing=\"Fastest\">\n    <host id=\"a\" speed=\"1Gf\"/>\n  </zone>\n",
       ":4:",
       {"routing", "Fastest"}},
      {"duplicate host id",
       hosts + "    <host id=\"a\" speed=\"2Gf\"/>\n  </zone>\n",
       ":7:",
       {"duplicate host id 'a'", "line 5"}},
      {"duplicate link id",
       hosts + "    <link id=\"l\" bandwidth=\"1Gbps\" latency=\"0\"/>\n"
               "    <link id=\"l\" bandwidth=\"1Gbps\" latency=\"0\"/>\n"
               "  </zone>\n",
       ":8:",
       {"duplicate link id 'l'", "line 7"}},
      {"bad bandwidth unit",
       hosts + "    <link id=\"l\" bandwidth=\"10Gbpz\" latency=\"1us\"/>\n  </zone>\n",
       ":7:",
       {"unit", "Gbpz"}},
      {"link without latency (SimGrid 3.32 ignores the DTD default)",
       hosts + "    <link id=\"l\" bandwidth=\"1Gbps\"/>\n  </zone>\n",
       ":7:",
       {"latency"}},
      {"route to an unknown host",
       hosts + "    <link id=\"l\" bandwidth=\"1Gbps\" latency=\"1us\"/>\n"
               "    <route src=\"a\" dst=\"c\"><link_ctn id=\"l\"/></route>\n  </zone>\n",
       ":8:",
       {"dst 'c'"}},
      {"route through an unknown link",
       hosts + "    <route src=\"a\" dst=\"b\"><link_ctn id=\"nope\"/></route>\n"
               "  </zone>\n",
       ":7:",
       {"unknown link 'nope'"}},
      {"cluster naming more hosts than SimGrid builds in reasonable time",
       "  <cluster id=\"c\" prefix=\"h-\" radical=\"0-9999999\" suffix=\"\" speed=\"1Gf\" bw=\"1Gbps\" "
       "lat=\"1us\"/>\n",
       ":4:",
       {"names more than 262144 hosts", "split the cluster"}},
      {"torus whose dimensions do not match the radical",
       "  <cluster id=\"c\" prefix=\"host-\" radical=\"0-15\" suffix=\"\" speed=\"1Gf\" bw=\"1Gbps\" "
       "lat=\"1us\"\n"
       "           topology=\"TORUS\" topo_parameters=\"4,3\"/>\n",
       ":4:",
       {"12 leaves", "16 hosts"}},
      {"fat tree whose leaves do not match the radical",
       "  <cluster id=\"c\" prefix=\"host-\" radical=\"0-15\" suffix=\"\" speed=\"1Gf\" bw=\"1Gbps\" "
       "lat=\"1us\"\n"
       "           topology=\"FAT_TREE\" topo_parameters=\"2;4,2;1,2;1,1\"/>\n",
       ":4:",
       {"8 leaves", "16 hosts"}},
      {"malformed dragonfly parameters",
       "  <cluster id=\"c\" prefix=\"host-\" radical=\"0-15\" suffix=\"\" speed=\"1Gf\" bw=\"1Gbps\" "
       "lat=\"1us\"\n"
       "           topology=\"DRAGONFLY\" topo_parameters=\"2,1;2,1\"/>\n",
       ":4:",
       {"DRAGONFLY topo_parameters"}},
      {"ns-3 on a cluster without backbone",
       "  <cluster id=\"c\" prefix=\"host-\" radical=\"0-3\" suffix=\"\" speed=\"1Gf\" bw=\"1Gbps\" "
       "lat=\"1us\"/>\n",
       ":4:",
       {"ns3", "bb_bw"},
       {"--set", "network=ns3"}},
      {"ns-3 on a fat-tree cluster",
       "  <cluster id=\"c\" prefix=\"host-\" radical=\"0-3\" suffix=\"\" speed=\"1Gf\" bw=\"1Gbps\" "
       "lat=\"1us\"\n"
       "           bb_bw=\"10Gbps\" bb_lat=\"1us\" topology=\"FAT_TREE\" topo_parameters=\"1;4;1;1\"/>\n",
       ":4:",
       {"ns3", "FAT_TREE"},
       {"--set", "network=ns3"}},
  };
  {
    // A shipped platform whose nodes are joined by two-link routes, which SimGrid 3.32 hides from ns-3.
    const fs::path dir = fresh_dir("platform-xml");
    const fs::path scenario = dir / "s.yaml";
    const std::string dgx = std::string(AGGSIM_SOURCE_DIR) + "/platforms/dgx_4x8.xml";
    write_file(scenario, scenario_text("{file: " + dgx + "}"));
    expect_rejected(dir, scenario.string(),
                    {"ns-3 on hosts joined only by longer routes",
                     "",
                     dgx + ":44:",
                     {"ns3", "node-1-gpu-0", "cannot reach", "line 137 has 2"},
                     {"--set", "network=ns3"}});
    fs::remove_all(dir);
  }
  for (const auto& c : cases) {
    const fs::path dir = fresh_dir("platform-xml");
    const fs::path xml = dir / "p.xml";
    write_file(xml,
               "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
               "<platform version=\"4.1\">\n" +
                   c.scenario_or_platform + "</platform>\n");
    const fs::path scenario = dir / "s.yaml";
    write_file(scenario, scenario_text("{file: " + xml.string() + "}"));
    expect_rejected(dir, scenario.string(),
                    {c.what, "", xml.string() + c.location, c.fragments, c.extra_args});
    fs::remove_all(dir);
  }
}
