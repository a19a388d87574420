// The references generated from the tables aggsim reads and writes with: the committed text must
// be what aggsim prints now (regenerate with the command named in each file), and the tables must
// hold what the loader and the writers really use.
#include <catch2/catch.hpp>
#include <map>
#include <set>
#include <sstream>

#include "support/cli.hpp"
#include "support/csv.hpp"

using namespace aggsim::test;
namespace fs = std::filesystem;

namespace {

void check_generated(const std::vector<std::string>& args, const std::string& committed) {
  const auto r = run_aggsim(args);
  REQUIRE(r.exit_code == 0);
  INFO("regenerate: build/aggsim " << args[0] << " " << args[1] << " --markdown > " << committed);
  CHECK(r.out == read_file(fs::path(AGGSIM_SOURCE_DIR) / committed));
}

// The key paths the Markdown reference lists (first cell of each table row).
std::set<std::string> listed_keys() {
  const auto r = run_aggsim({"list", "--keys", "--markdown"});
  std::set<std::string> keys;
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);)
    if (line.rfind("| `", 0) == 0) keys.insert(line.substr(3, line.find('`', 3) - 3));
  return keys;
}

}  // namespace

TEST_CASE("scenarios/KEYS.md and sim/output/COLUMNS.md are what aggsim prints", "[docs]") {
  check_generated({"list", "--keys", "--markdown"}, "scenarios/KEYS.md");
  check_generated({"list", "--outputs", "--markdown"}, "sim/output/COLUMNS.md");
}

TEST_CASE("the key reference lists every key the loader accepts, the ones it used to omit included",
          "[docs]") {
  const auto keys = listed_keys();
  for (const char* key :
       {"output.trace", "output.dir", "engine.replay", "compute.reduce_speed", "compute.speed_factors",
        "compute.straggler.sigma", "algorithm.every", "model.layers", "platform.overrides", "sweep.grid",
        "sweep.repeat", "calibration", "network"})
    CHECK(keys.count(key) == 1);
  // The loader's own list of top-level keys (its "unknown key" message) is the reference's.
  const auto dir = fresh_dir("keys");
  write_file(
      dir / "s.yaml",
      "ranks: 2\nplatform: {topology: cluster, hosts: 2}\nalgorithm: {name: ring_allreduce}\nbogus: 1\n");
  const auto r = run_aggsim({"validate", "s.yaml"}, dir);
  REQUIRE(r.exit_code == 2);
  const auto at = r.err.find("known keys here: ");
  REQUIRE(at != std::string::npos);
  std::set<std::string> accepted;
  std::stringstream list(r.err.substr(at + 17, r.err.find('\n', at) - at - 17));
  for (std::string k; std::getline(list, k, ',');) accepted.insert(k.substr(k.find_first_not_of(' ')));
  std::set<std::string> top;
  for (const auto& k : keys)
    if (k.find('.') == std::string::npos && k != "sweep") top.insert(k);
  CHECK(accepted == top);
  // Every key of compute, engine and output the reference lists is accepted (and means something).
  write_file(dir / "all.yaml", R"(ranks: 2
platform: {topology: cluster, hosts: 2}
algorithm: {name: ring_allreduce}
compute: {speed_factors: [1], reduce_speed: host, straggler: {distribution: none, sigma: 0.5, mean: 0.5, probability: 1}}
engine: {replay: true}
output: {dir: out/x, trace: false}
)");
  CHECK(run_aggsim({"validate", "all.yaml"}, dir).exit_code == 0);
  for (const auto& k : keys)
    if (k.rfind("compute.", 0) == 0 || k.rfind("engine.", 0) == 0 || k.rfind("output.", 0) == 0)
      CHECK(read_file(dir / "all.yaml").find(k.substr(k.rfind('.') + 1) + ":") != std::string::npos);
}

TEST_CASE("the output reference names exactly the columns the files have", "[docs]") {
  const auto dir = fresh_dir("columns");
  write_file(dir / "s.yaml",
             "ranks: 4\nsteps: 2\nplatform: {topology: cluster, hosts: 4}\nmodel: {size: 1MB}\n"
             "algorithm: {name: ring_allreduce}\nworkload: {problem: softmax, dim: 8, classes: 3, "
             "target_loss: 0.1}\ncalibration: cal.yaml\n");
  write_file(dir / "cal.yaml",
             "format: 1\nnetwork: auto\nfactors:\n  inter: [{from: 0B, latency: 1, bandwidth: 1}]\n");
  REQUIRE(run_aggsim({"run", "s.yaml", "--out", "run", "-q"}, dir).exit_code == 0);
  const auto r = run_aggsim({"list", "--outputs", "--markdown"});
  // The columns each section of the reference lists, in order.
  std::map<std::string, std::vector<std::string>> listed;
  std::string section;
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("## `", 0) == 0) section = line.substr(4, line.size() - 5);
    if (line.rfind("| `", 0) == 0) listed[section].push_back(line.substr(3, line.find('`', 3) - 3));
  }
  for (const char* csv : {"steps.csv", "collectives.csv"}) {
    INFO(csv);
    CHECK(parse_csv(read_file(dir / "run" / csv)).at(0) == listed.at(csv));
  }
  std::vector<std::string> fields;
  const std::string json = read_file(dir / "run/summary.json");
  for (std::size_t at = json.find("\n  \""); at != std::string::npos; at = json.find("\n  \"", at + 1))
    fields.push_back(json.substr(at + 4, json.find('"', at + 4) - at - 4));
  // A workload with a target and a calibration: every field present.
  CHECK(fields == listed.at("summary.json"));
}

TEST_CASE("a sweep's results.csv has the columns its reference describes, format_version included",
          "[docs]") {
  const auto dir = fresh_dir("results");
  write_file(dir / "s.yaml",
             "ranks: 2\nsteps: 1\nplatform: {topology: cluster, hosts: 4}\nmodel: {size: 1MB, math: off}\n"
             "algorithm: {name: ring_allreduce}\n");
  const auto r =
      run_aggsim({"sweep", "run", "s.yaml", "--grid", "ranks=2,4", "--jobs", "1", "--out", "sw"}, dir);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto header = parse_csv(read_file(dir / "sw" / "results.csv")).at(0);
  // id, status, the swept key, every summary.json field but the one named like the swept key, error.
  std::vector<std::string> expected = {"id", "status", "ranks"};
  fs::path point;
  for (const auto& entry : fs::recursive_directory_iterator(dir / "sw"))
    if (entry.path().filename() == "summary.json") point = entry.path();
  REQUIRE(!point.empty());
  const std::string json = read_file(point);
  for (std::size_t at = json.find("\n  \""); at != std::string::npos; at = json.find("\n  \"", at + 1))
    if (const std::string field = json.substr(at + 4, json.find('"', at + 4) - at - 4); field != "ranks")
      expected.push_back(field);
  expected.push_back("error");
  CHECK(header == expected);
  REQUIRE(header.size() > 3);
  CHECK(header[3] == "format_version");  // the version of both layouts, first of the summary's fields
  fs::remove_all(dir);
}
