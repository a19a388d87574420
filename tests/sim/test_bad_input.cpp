// Bad scenarios and platforms: each gets a clear message naming file, line and key, exit code 2,
// and leaves no output folder (not even a hidden temporary one).
#include <catch2/catch.hpp>
#include <filesystem>
#include <string>
#include <vector>

#include "support/cli.hpp"
#include "support/scenarios.hpp"

using namespace aggsim::test;
namespace fs = std::filesystem;

namespace {

// With an explicit op, which several cases rewrite.
const std::string kGood = std::string(kSmallScenario) + "  op: avg\n";

std::string replace(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}

struct BadCase {
  std::string name;
  std::string scenario;                 // content of bad.yaml (ignored when `missing_scenario`)
  std::vector<std::string> extra_args;  // after `run bad.yaml --out OUT`
  std::vector<std::string> expected;    // substrings of stderr
  std::string platform_xml = "";        // written as platform.xml beside bad.yaml when non-empty
  bool missing_scenario = false;
};

std::vector<BadCase> bad_cases() {
  const std::string xml_platform =
      replace(kGood, "  topology: cluster\n  hosts: 4\n", "  file: platform.xml\n");
  return {
      {"YAML syntax error", replace(kGood, "ranks: 4", "ranks: [4"), {}, {"bad.yaml:", "syntax error"}},
      {"unknown top-level key",
       replace(kGood, "ranks: 4", "rank: 4"),
       {},
       {"bad.yaml:2:1: rank: unknown key (did you mean 'ranks'?)"}},
      {"unknown nested key",
       replace(kGood, "  op: avg", "  op: avg\n  chunkz: 3"),
       {},
       {"bad.yaml:14:3: algorithm.chunkz: unknown key"}},
      {"wrong type",
       replace(kGood, "ranks: 4", "ranks: many"),
       {},
       {"bad.yaml:2:8: ranks: must be an integer"}},
      {"zero ranks",
       replace(kGood, "ranks: 4", "ranks: 0"),
       {},
       {"bad.yaml:2:8: ranks: must be an integer in [1,"}},
      {"fractional steps",
       replace(kGood, "steps: 1", "steps: 1.5"),
       {},
       {"bad.yaml:3:8: steps: must be an integer"}},
      {"negative size",
       replace(kGood, "size: 1MB", "size: -5MB"),
       {},
       {"bad.yaml:9:9: model.size:", "non-negative"}},
      {"zero size",
       replace(kGood, "size: 1MB", "size: 0B"),
       {},
       {"bad.yaml:9:9: model.size: must be a positive size"}},
      {"bad size unit",
       replace(kGood, "size: 1MB", "size: 10XB"),
       {},
       {"bad.yaml:9:9: model.size:", "unknown size unit 'XB'"}},
      {"bad bandwidth unit",
       replace(kGood, "  hosts: 4\n", "  hosts: 4\n  bandwidth: 10Gbit\n"),
       {},
       {"bad.yaml:7:14: platform.bandwidth:", "unknown bandwidth unit 'Gbit'"}},
      {"bad boolean",
       replace(kGood, "  proxy_dim: 64", "  proxy_dim: 64\n  math: maybe"),
       {},
       {"bad.yaml:11:9: model.math: must be true or false"}},
      {"ranks exceed generated hosts",
       replace(kGood, "ranks: 4", "ranks: 32"),
       {},
       {"bad.yaml:2:8: ranks: 32 ranks do not fit on the 4 hosts of this cluster platform: use ranks: 4 or "
        "fewer, a bigger generated platform (platform.hosts: 32), or a platform XML file with at least 32 "
        "hosts"}},
      {"ranks exceed XML hosts",
       replace(xml_platform, "ranks: 4", "ranks: 17"),
       {},
       {"bad.yaml:2:8: ranks: 17 ranks do not fit on the 4 hosts of platform.xml: use ranks: 4 or fewer, "
        "a platform XML file with at least 17 hosts, or a generated platform (platform: {topology: cluster, "
        "hosts: 17})"},
       R"(<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1">
  <cluster id="c" prefix="host-" radical="0-3" suffix="" speed="1Gf" bw="1GBps" lat="1us"/>
</platform>
)"},
      {"missing platform file",
       replace(kGood, "  topology: cluster\n  hosts: 4\n", "  file: nowhere.xml\n"),
       {},
       {"bad.yaml:5:9: platform.file: platform file not found"}},
      {"malformed platform XML",
       xml_platform,
       {},
       {"platform.xml:4:1: malformed platform XML: expected >"},
       "<?xml version='1.0'?>\n<platform version=\"4.1\">\n  <cluster id=\"c\" "
       "prefix=\"host-\"\n</platform>\n"},
      {"XML that is not a platform",
       xml_platform,
       {},
       {"platform.xml:2:1: not a SimGrid platform: the root element is not <platform>"},
       "<?xml version='1.0'?>\n<html><body/></html>\n"},
      {"unknown algorithm",
       replace(kGood, "name: ring_allreduce", "name: ringg"),
       {},
       {"bad.yaml:12:9: algorithm.name: unknown algorithm 'ringg' (available: ring_allreduce"}},
      {"unknown compressor",
       kGood + std::string("compression:\n  name: zip\n"),
       {},
       {"bad.yaml:15:9: compression.name: unknown compressor 'zip'"}},
      {"bad op",
       replace(kGood, "op: avg", "op: mean"),
       {},
       {"bad.yaml:13:7: algorithm.op: must be one of sum | avg | min | max | custom_avg (got 'mean')"}},
      {"custom_avg without denominator",
       replace(kGood, "op: avg", "op: custom_avg"),
       {},
       {"bad.yaml:12:3: algorithm: op custom_avg needs 'denominator'"}},
      {"missing algorithm name",
       replace(kGood, "  name: ring_allreduce\n", ""),
       {},
       {"algorithm: missing required key 'name'"}},
      {"missing platform",
       replace(kGood, "platform:\n  topology: cluster\n  hosts: 4\n", ""),
       {},
       {"missing required key 'platform'"}},
      {"file and topology together",
       replace(kGood, "  hosts: 4\n", "  hosts: 4\n  file: platform.xml\n"),
       {},
       {"platform.file: give either a platform file or a topology generator, not both"}},
      {"unknown network preset",
       replace(kGood, "network: alpha_beta", "network: fast"),
       {},
       {"bad.yaml:7:10: network: must be one of auto | lv08 | alpha_beta | ns3"}},
      {"scenario is a list",
       "- 1\n- 2\n",
       {},
       {"bad.yaml:1:1: (top level): not a scenario: expected a mapping of keys"}},
      {"empty scenario", "", {}, {"bad.yaml:1:1: (top level): the scenario is empty"}},
      {"missing scenario file", "", {}, {"bad.yaml: scenario file not found"}, "", true},
      {"--set without value", kGood, {"--set", "ranks"}, {"--set ranks: expected key.path=value"}},
      {"--set unknown key",
       kGood,
       {"--set", "algorithm.chunkz=3"},
       {"--set algorithm.chunkz=3: algorithm.chunkz: unknown key"}},
      {"--set bad value", kGood, {"--set", "ranks=-2"}, {"--set ranks=-2: ranks: must be an integer"}},
      {"duplicate top-level key",
       kGood + std::string("ranks: 8\n"),
       {},
       {"bad.yaml:14:1: ranks: duplicate key (first given at line 2)"}},
      {"duplicate nested key",
       replace(kGood, "  op: avg", "  op: avg\n  name: tree_allreduce"),
       {},
       {"bad.yaml:14:3: algorithm.name: duplicate key (first given at line 12)"}},
      {"duplicate key in a flow mapping",
       kGood + std::string("compute: {speed_factors: {slow_ranks: [1], factor: 2, factor: 3}}\n"),
       {},
       {"bad.yaml:14:55: compute.speed_factors.factor: duplicate key (first given at column 44)"}},
      {"duplicate key in a --set value",
       kGood,
       {"--set", "platform={topology: cluster, hosts: 4, hosts: 8}"},
       {"--set platform={topology: cluster, hosts: 4, hosts: 8}:1:31: platform.hosts: duplicate key "
        "(first given at column 21)"}},
      {"misspelt algorithm",
       replace(kGood, "name: ring_allreduce", "name: rign_allreduce"),
       {},
       {"bad.yaml:12:9: algorithm.name: unknown algorithm 'rign_allreduce' (did you mean 'ring_allreduce'?) "
        "(available: ring_allreduce"}},
      {"misspelt compressor",
       kGood + std::string("compression:\n  name: powersdg\n"),
       {},
       {"bad.yaml:15:9: compression.name: unknown compressor 'powersdg' (did you mean 'powersgd'?)"}},
      {"misspelt topology",
       replace(kGood, "topology: cluster", "topology: fat_three"),
       {},
       {"bad.yaml:5:13: platform.topology: unknown topology 'fat_three' (did you mean 'fat_tree'?)"}},
      {"ranks exceed generated nodes",
       replace(kGood, "  hosts: 4\n", "  nodes: 2\n  gpus_per_node: 2\n"),
       {"--set", "ranks=9"},
       {"--set ranks=9: ranks: 9 ranks do not fit on the 4 hosts of this cluster platform: use ranks: 4 or "
        "fewer, a bigger generated platform (platform.nodes: 5), or a platform XML file with at least 9 "
        "hosts"}},
      {"ranks exceed a torus with fixed dimensions",
       replace(kGood, "  topology: cluster\n  hosts: 4\n",
               "  topology: torus\n  nodes: 4\n  dimensions: [2, 2]\n"),
       {"--set", "ranks=6"},
       {"ranks: 6 ranks do not fit on the 4 hosts of this torus platform: use ranks: 4 or fewer, a bigger "
        "generated platform (platform.nodes: 6, with dimensions to match)"}},
      {"--set of a generator key on an XML platform",
       xml_platform,
       {"--set", "platform.bandwidth=25Gbps"},
       {"--set platform.bandwidth=25Gbps: platform.bandwidth: the platform is the file platform.xml: "
        "generated-platform keys such as 'bandwidth' apply only to 'platform: {topology: ...}'"},
       R"(<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1">
  <cluster id="c" prefix="host-" radical="0-3" suffix="" speed="1Gf" bw="1GBps" lat="1us"/>
</platform>
)"},
      {"a kilo written 'K' (SimGrid's grammar writes 'k')",
       replace(kGood, "size: 1MB", "size: 1KB"),
       {},
       {"bad.yaml:9:9: model.size: '1KB' has an unknown size unit 'KB'", "did you mean 'kB'?"}},
      {"a space between number and unit",
       replace(kGood, "size: 1MB", "size: 1 MB"),
       {},
       {"bad.yaml:9:9: model.size: '1 MB': write the unit right after the number ('1MB')"}},
      {"--set of a key the new choice does not take",
       kGood + std::string("compression: {name: powersgd, rank: 2}\n"),
       {"--set", "compression.name=none", "--set", "compression.rank=4"},
       {"--set compression.rank=4: compression.rank: unknown key"}},
      {"unknown command-line flag", kGood, {"--bogus"}, {"--bogus"}},
      {"unknown SimGrid key", kGood, {"--cfg=bogus/key:1"}, {"SimGrid flag: Bad config key: bogus/key"}},
      {"unknown SimGrid network model",
       kGood,
       {"--cfg=network/model:Bogus"},
       {"unknown network model 'Bogus'"}},
  };
}

}  // namespace

TEST_CASE("the good base scenario of the bad-input table runs", "[input]") {
  const auto dir = fresh_dir("good");
  write_file(dir / "good.yaml", kGood);
  const auto r = run_aggsim({"run", "good.yaml", "--out", "out"}, dir);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(fs::exists(dir / "out" / "summary.json"));
}

TEST_CASE("bad scenarios and platforms give clear errors, exit 2 and no output", "[input]") {
  const auto cases = bad_cases();
  REQUIRE(cases.size() >= 15);
  for (const auto& c : cases) {
    for (const std::string verb : {"run", "validate"}) {
      INFO("case: " << c.name << " (" << verb << ")");
      const auto dir = fresh_dir("bad");
      if (!c.missing_scenario) write_file(dir / "bad.yaml", c.scenario);
      if (!c.platform_xml.empty()) write_file(dir / "platform.xml", c.platform_xml);
      std::vector<std::string> args = {verb, "bad.yaml"};
      if (verb == "run") args.insert(args.end(), {"--out", "out"});
      args.insert(args.end(), c.extra_args.begin(), c.extra_args.end());
      const auto r = run_aggsim(args, dir);
      INFO("stderr: " << r.err);
      CHECK(r.exit_code == 2);
      for (const auto& needle : c.expected) CHECK(r.err.find(needle) != std::string::npos);
      // Nothing written: no output folder, no leftover temporary folder.
      std::vector<std::string> entries;
      for (const auto& e : fs::directory_iterator(dir)) entries.push_back(e.path().filename().string());
      for (const auto& e : entries) CHECK((e == "bad.yaml" || e == "platform.xml"));
      fs::remove_all(dir);
    }
  }
}
