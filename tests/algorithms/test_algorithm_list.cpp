// `aggsim list` names every algorithm, compressor and topology with each of its parameters and
// their defaults, plus the keys every algorithm takes and the model/workload/compute keys; and the
// scenario loader checks those parameters.
#include <catch2/catch.hpp>
#include <sstream>

#include "algorithms/registry.hpp"
#include "sim/platform/topology.hpp"
#include "sim/scenario/workload_loader.hpp"
#include "sim/workload/options.hpp"
#include "support/cli.hpp"
#include "support/reduction_check.hpp"

using namespace aggsim::test;

namespace {

// The lines of `out` from the one equal to `heading` (trimmed) up to the next blank line.
std::vector<std::string> section(const std::string& out, const std::string& heading) {
  std::vector<std::string> lines;
  std::istringstream in(out);
  bool inside = false;
  for (std::string line; std::getline(in, line);) {
    if (!inside) {
      inside = line.rfind(heading, 0) == 0;
      continue;
    }
    if (line.empty()) break;
    lines.push_back(line);
  }
  INFO("section " << heading);
  CHECK(!lines.empty());
  return lines;
}

std::string first_word(const std::string& line) {
  std::istringstream in(line);
  std::string word;
  in >> word;
  return word;
}

// Within `lines`, the entry `name` (a line "  name  summary") is followed by one line per spec:
// "key kind help (default D | required | optional ...)". An empty name: `lines` are the specs.
void check_entry(const std::vector<std::string>& lines, const std::string& name,
                 const std::vector<aggsim::ParamSpec>& specs) {
  INFO("entry '" << name << "'");
  std::size_t i = 0;
  if (!name.empty()) {
    while (i < lines.size() && !(lines[i].rfind("  " + name + " ", 0) == 0)) ++i;
    REQUIRE(i < lines.size());
    ++i;
  }
  std::vector<std::string> own;  // the entry's parameter lines (indented deeper than entries)
  for (; i < lines.size() && lines[i].rfind("      ", 0) == 0; ++i) own.push_back(lines[i]);
  CHECK(own.size() == specs.size());
  for (const auto& spec : specs) {
    INFO("key " << spec.key);
    const std::string def = spec.required               ? "(required"
                            : spec.default_text.empty() ? "(optional"
                                                        : "(default " + spec.default_text;
    bool found = false;
    for (const auto& line : own)
      found = found || (first_word(line) == spec.key && line.find(def) != std::string::npos &&
                        (spec.choices.empty() || line.find(spec.choices.back()) != std::string::npos));
    CHECK(found);
  }
}

}  // namespace

// Iterates over the registries, so a new algorithm, compressor, topology or parameter that `aggsim
// list` did not show would fail here.
TEST_CASE("aggsim list shows every registered name and every parameter with its default", "[list]") {
  const auto r = run_aggsim({"list"});
  REQUIRE(r.exit_code == 0);
  const auto algorithms = section(r.out, "Algorithms ");
  for (const auto& a : aggsim::algorithm_table()) check_entry(algorithms, a.name, a.params);
  for (const auto& c : aggsim::compressor_table())
    check_entry(section(r.out, "Compressors "), c.name, c.params);
  for (const auto& t : aggsim::topology_table()) check_entry(section(r.out, "Topologies "), t.name, t.params);
  check_entry(section(r.out, "Common algorithm keys "), "", aggsim::common_algorithm_param_specs());
  check_entry(section(r.out, "Model "), "", aggsim::model_param_specs());
  check_entry(section(r.out, "Training workload "), "", aggsim::workload_param_specs());
  check_entry(section(r.out, "Straggler noise "), "", aggsim::straggler_param_specs());
  // The common keys, as the loader knows them.
  const auto common = section(r.out, "Common algorithm keys ");
  for (const std::string key : {"op", "denominator", "granularity", "bucket", "apply_to"}) {
    INFO(key);
    CHECK(std::count_if(common.begin(), common.end(),
                        [&](const std::string& l) { return first_word(l) == key; }) == 1);
  }
  CHECK_THAT(r.out, Catch::Contains("(default 25MB)"));
  // compute.speed_factors is a list or a rule, not a spec: the straggler heading names it.
  CHECK_THAT(r.out, Catch::Contains("compute.speed_factors"));
  CHECK_THAT(r.out, Catch::Contains("(default avg; one of sum | avg | min | max | custom_avg)"));
}

// The defaults `aggsim list` prints are the ones a scenario gets when it leaves the keys out.
TEST_CASE("a scenario without the common keys gets the defaults aggsim list prints", "[list]") {
  const auto sc = aggsim::load_scenario_text(R"(
ranks: 2
platform: {topology: cluster, hosts: 2}
algorithm: {name: ring_allreduce}
)",
                                             "defaults.yaml", {});
  CHECK(sc.algorithm.op.kind == aggsim::ReduceKind::avg);
  CHECK(sc.algorithm.granularity == aggsim::Granularity::model);
  CHECK(sc.algorithm.bucket_bytes == 25'000'000);
  CHECK(sc.algorithm.apply_to == aggsim::ApplyTo::gradients);
  CHECK(sc.model.size_bytes == 100'000'000);
  CHECK(sc.model.proxy_dim == 4096);
  CHECK(sc.model.batch == 32);
  CHECK(sc.model.math);
}

TEST_CASE("aggsim list shows every all-reduce algorithm with its parameters and defaults", "[list]") {
  const auto r = run_aggsim({"list"});
  REQUIRE(r.exit_code == 0);
  for (const char* name : {"ring_allreduce", "halving_doubling_allreduce", "recursive_doubling_allreduce", "tree_allreduce",
                           "double_binary_tree_allreduce", "hierarchical_allreduce", "torus2d_allreduce"})
    CHECK_THAT(r.out, Catch::Contains(name));
  CHECK_THAT(r.out, Catch::Contains("pieces the vector is pipelined in through the tree (default 1)"));
  CHECK_THAT(r.out, Catch::Contains("pieces each half is pipelined in through its tree (default 8)"));
  CHECK_THAT(r.out, Catch::Contains("(default ring; one of ring | halving_doubling | recursive_doubling | tree | double_binary_tree)"));
  CHECK_THAT(r.out, Catch::Contains("grid rows, must divide the rank count"));
}

TEST_CASE("algorithm parameters are checked against their specs when the scenario loads", "[list]") {
  const std::string yaml = R"(
ranks: 4
platform: {topology: cluster, hosts: 4}
algorithm: {name: hierarchical_allreduce, op: avg, inter: butterfly}
)";
  CHECK_THROWS_WITH(aggsim::load_scenario_text(yaml, "bad.yaml", {}), Catch::Contains("butterfly"));
  CHECK_THROWS(aggsim::load_scenario_text(R"(
ranks: 4
platform: {topology: cluster, hosts: 4}
algorithm: {name: tree_allreduce, op: avg, chunks: 0}
)", "bad.yaml", {}));
}
