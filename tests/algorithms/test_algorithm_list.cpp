// `aggsim list` names exactly the algorithms and compressors the loader accepts, and the defaults
// it prints are the values a scenario gets when it leaves a key out; the scenario loader checks
// the parameters.
#include <catch2/catch.hpp>
#include <sstream>

#include "algorithms/registry.hpp"
#include "sim/platform/topology.hpp"
#include "sim/scenario/scenario_loader.hpp"
#include "sim/scenario/workload_loader.hpp"
#include "sim/workload/options.hpp"
#include "support/aggsim_list.hpp"
#include "support/algorithm_keys.hpp"
#include "support/cli.hpp"
#include "support/reduction_check.hpp"

using namespace aggsim::test;

namespace {

// A section of `aggsim list`'s output, which must not be empty.
std::vector<std::string> section(const std::string& out, const std::string& heading) {
  const auto lines = list_section(out, heading);
  INFO("section " << heading);
  CHECK(!lines.empty());
  return lines;
}

// "unknown algorithm 'x' (available: a | b)" -> {a, b}
std::vector<std::string> names_the_loader_accepts(const std::string& yaml) {
  std::string message;
  try {
    aggsim::load_scenario_text(yaml, "names.yaml", {});
  } catch (const std::exception& e) {
    message = e.what();
  }
  const auto open = message.find("(available: ");
  REQUIRE(open != std::string::npos);
  std::vector<std::string> names;
  std::istringstream in(message.substr(open + 12, message.rfind(')') - open - 12));
  for (std::string word; in >> word;)
    if (word != "|") names.push_back(word);
  return names;
}

bool validates(const std::string& yaml) {
  const auto dir = fresh_dir("list");
  write_file(dir / "s.yaml", yaml);
  const auto r = run_aggsim({"validate", (dir / "s.yaml").string()});
  INFO(r.err);
  std::filesystem::remove_all(dir);
  return r.exit_code == 0;
}

const std::string kPlatform =
    "ranks: 4\nsteps: 1\nplatform: {topology: cluster, hosts: 4}\nmodel: {size: 1MB}\n";

// One "key ... (default D" line of an entry: the key and D as printed.
struct PrintedDefault {
  std::string key;
  std::string value;
};

// The printed defaults of entry `name` (all of `lines` when name is empty).
std::vector<PrintedDefault> printed_defaults(const std::vector<std::string>& lines, const std::string& name) {
  std::size_t i = 0;
  if (!name.empty()) {
    while (i < lines.size() && lines[i].rfind("  " + name + " ", 0) != 0) ++i;
    ++i;
  }
  std::vector<PrintedDefault> out;
  for (; i < lines.size() && lines[i].rfind("      ", 0) == 0; ++i) {
    const auto at = lines[i].rfind("(default ");
    if (at == std::string::npos) continue;
    const std::string rest = lines[i].substr(at + 9);
    out.push_back({first_word(lines[i]), rest.substr(0, rest.find_first_of(";)"))});
  }
  return out;
}

// Loading `yaml` with the key set to its printed default gives the same resolved scenario as
// leaving the key out.
void check_printed_default(const std::string& yaml, const std::string& key, const std::string& value) {
  INFO(key << "=" << value << " in\n" << yaml);
  const std::string left_out = aggsim::resolved_yaml(aggsim::load_scenario_text(yaml, "default.yaml", {}));
  std::string given;
  REQUIRE_NOTHROW(
      given = aggsim::resolved_yaml(aggsim::load_scenario_text(yaml, "default.yaml", {key + "=" + value})));
  CHECK(given == left_out);
}

}  // namespace

TEST_CASE("aggsim list prints exactly the algorithms and compressors the loader accepts", "[list]") {
  const auto r = run_aggsim({"list"});
  REQUIRE(r.exit_code == 0);
  const auto algorithms = list_entry_names(section(r.out, "Algorithms "));
  const auto compressors = list_entry_names(section(r.out, "Compressors "));
  CHECK(algorithms == names_the_loader_accepts(kPlatform + "algorithm: {name: no_such_algorithm}\n"));
  CHECK(compressors == names_the_loader_accepts(kPlatform + "algorithm: {name: allgather}\n"
                                                            "compression: {name: no_such_compressor}\n"));
  CHECK(algorithms.size() >= 11);
  CHECK(compressors.size() >= 11);
  for (const auto& name : algorithms) {
    INFO("algorithm " << name);
    CHECK(validates(kPlatform + "algorithm: {name: " + name + required_algorithm_keys(name, 4) + "}\n"));
  }
  for (const auto& name : compressors) {
    INFO("compressor " << name);
    CHECK(validates(kPlatform + "algorithm: {name: allgather}\ncompression: {name: " + name + "}\n"));
  }
  CHECK_FALSE(validates(kPlatform + "algorithm: {name: ring_allreduce_typo}\n"));
}

TEST_CASE("every default aggsim list prints is what a scenario gets when it leaves the key out", "[list]") {
  const auto r = run_aggsim({"list"});
  REQUIRE(r.exit_code == 0);
  const auto algorithms = section(r.out, "Algorithms ");
  std::size_t checked = 0;
  for (const auto& name : list_entry_names(algorithms))
    for (const auto& d : printed_defaults(algorithms, name)) {
      check_printed_default(
          kPlatform + "algorithm: {name: " + name + required_algorithm_keys(name, 4) + "}\n",
          "algorithm." + d.key, d.value);
      ++checked;
    }
  const auto compressors = section(r.out, "Compressors ");
  for (const auto& name : list_entry_names(compressors))
    for (const auto& d : printed_defaults(compressors, name)) {
      check_printed_default(kPlatform + "algorithm: {name: allgather}\ncompression: {name: " + name + "}\n",
                            "compression." + d.key, d.value);
      ++checked;
    }
  for (const auto& d : printed_defaults(section(r.out, "Common algorithm keys "), "")) {
    check_printed_default(kPlatform + "algorithm: {name: ring_allreduce}\n", "algorithm." + d.key, d.value);
    ++checked;
  }
  const std::string no_model =
      "ranks: 4\nplatform: {topology: cluster, hosts: 4}\nalgorithm: {name: ring_allreduce}\n";
  // model.batch applies to layer tables only, model.size to models without one.
  const std::string with_layers =
      no_model + "model: {layers: " + std::string(AGGSIM_SOURCE_DIR) + "/scenarios/models/resnet50.yaml}\n";
  for (const auto& d : printed_defaults(section(r.out, "Model "), "")) {
    check_printed_default(d.key == "batch" ? with_layers : no_model, "model." + d.key, d.value);
    ++checked;
  }
  // The common keys' defaults are printed (op, granularity, bucket, apply_to at least).
  CHECK(checked >= 30);
}

TEST_CASE("aggsim list shows every all-reduce algorithm with its parameters and defaults", "[list]") {
  const auto r = run_aggsim({"list"});
  REQUIRE(r.exit_code == 0);
  for (const char* name :
       {"ring_allreduce", "halving_doubling_allreduce", "recursive_doubling_allreduce", "tree_allreduce",
        "double_binary_tree_allreduce", "hierarchical_allreduce", "torus2d_allreduce"})
    CHECK_THAT(r.out, Catch::Contains(name));
  CHECK_THAT(r.out, Catch::Contains("pieces the vector is pipelined in through the tree (default 1)"));
  CHECK_THAT(r.out, Catch::Contains("chunk_bytes"));
  CHECK_THAT(r.out, Catch::Contains("512KiB when neither chunk_bytes nor chunks is given"));
  CHECK_THAT(r.out, Catch::Contains("explicit override: pieces each half is pipelined in"));
  CHECK_THAT(r.out, Catch::Contains("(default ring; one of ring | halving_doubling | recursive_doubling | "
                                    "tree | double_binary_tree | nccl)"));
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
)",
                                          "bad.yaml", {}));
}
