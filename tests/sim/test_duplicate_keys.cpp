// A key given twice in one mapping is an error naming both places, in every YAML aggsim reads:
// scenarios, layer tables, calibration files, sweep files, --set and --grid values. (yaml-cpp keeps
// both entries and its lookups find the first, so without the check the second is silently lost.)
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <string>

#include "sim/core/error.hpp"
#include "sim/scenario/scenario_loader.hpp"
#include "sim/scenario/yaml_reader.hpp"
#include "sim/sweep/sweep.hpp"
#include "support/cli.hpp"

using namespace aggsim;
using namespace aggsim::test;
namespace fs = std::filesystem;

namespace {

const std::string kScenario = R"(seed: 7
ranks: 4
steps: 1
platform: {topology: cluster, hosts: 4}
network: alpha_beta
model: {size: 1MB, proxy_dim: 64}
algorithm: {name: ring_allreduce}
)";

template <class F>
std::string error_of(F&& load) {
  try {
    load();
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("a duplicated scenario key is an error naming both lines, and the first one no longer wins",
          "[input][duplicate]") {
  const std::string err = error_of([] { load_scenario_text(kScenario + "steps: 5\n", "s.yaml"); });
  CHECK(err == "s.yaml:8:1: steps: duplicate key (first given at line 3)");
  // Nested in a block mapping under a list item: the path names the item.
  const std::string nested =
      error_of([] { parse_yaml("layers:\n  - name: a\n    params: 4\n    params: 5\n", "t.yaml"); });
  CHECK(nested == "t.yaml:4:5: layers[0].params: duplicate key (first given at line 3)");
}

TEST_CASE("duplicate keys in a layer table and a calibration file name that file", "[input][duplicate]") {
  const auto dir = fresh_dir("dup");
  write_file(
      dir / "layers.yaml",
      "name: tiny\nlayers:\n  - {name: fc, shape: [4, 4], params: 16, forward_flops: 32, params: 20}\n");
  const std::string table = (dir / "layers.yaml").string();
  std::string scenario = kScenario;
  scenario.replace(scenario.find("size: 1MB, proxy_dim: 64"), 24, "layers: " + table);
  CHECK(error_of([&] { load_scenario_text(scenario, "s.yaml"); }) ==
        table + ":3:62: layers[0].params: duplicate key (first given at column 31)");

  write_file(dir / "cal.yaml", "network: alpha_beta\nfactors:\n  intra: []\nnetwork: lv08\n");
  const std::string cal = (dir / "cal.yaml").string();
  CHECK(error_of([&] { load_scenario_text(kScenario + "calibration: " + cal + "\n", "s.yaml"); }) ==
        cal + ":4:1: network: duplicate key (first given at line 1)");
  fs::remove_all(dir);
}

TEST_CASE("duplicate keys in a sweep file and in --grid values", "[input][duplicate][sweep]") {
  const std::string sweep_text = kScenario + "sweep:\n  grid:\n    ranks: [2, 4]\n    ranks: [1]\n";
  CHECK(error_of([&] { expand_sweep_text(sweep_text, "w.yaml"); }) ==
        "w.yaml:11:5: sweep.grid.ranks: duplicate key (first given at line 10)");
  SweepExtras extras;
  extras.grid = {"platform={topology: cluster, hosts: 4, hosts: 8},{topology: cluster, hosts: 8}"};
  CHECK(error_of([&] { expand_sweep_text(kScenario, "w.yaml", extras); }) ==
        "--grid " + extras.grid[0] + ":1:31: platform.hosts: duplicate key (first given at column 21)");
}

TEST_CASE("aliases are not duplicates, and a self-referencing or exploding alias is checked quickly",
          "[input][duplicate]") {
  // The same anchored mapping reached three times holds each key once.
  CHECK_NOTHROW(parse_yaml("a: &m {k: 1, j: 2}\nb: *m\nc: [*m, *m]\n", "t.yaml"));
  CHECK_NOTHROW(parse_yaml("a: &s [*s]\n", "t.yaml"));  // yaml-cpp makes this a cycle
  // Ten levels of ten aliases each: 10^10 paths, a few dozen distinct nodes.
  std::string laughs = "l0: &l0 {k: 1}\n";
  for (int i = 1; i <= 10; ++i) {
    laughs += "l" + std::to_string(i) + ": &l" + std::to_string(i) + " [";
    for (int j = 0; j < 10; ++j) laughs += std::string(j ? ", " : "") + "*l" + std::to_string(i - 1);
    laughs += "]\n";
  }
  const auto start = std::chrono::steady_clock::now();
  CHECK_NOTHROW(parse_yaml(laughs, "t.yaml"));
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(2));
  // A duplicate inside an anchored mapping is still found.
  CHECK(error_of([] { parse_yaml("a: &m {k: 1, k: 2}\nb: *m\n", "t.yaml"); }) ==
        "t.yaml:1:14: a.k: duplicate key (first given at column 8)");
}
