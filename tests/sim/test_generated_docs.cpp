// The references generated from the tables aggsim reads and writes with: the committed text must
// be what aggsim prints now (regenerate with the command named in each file), and the tables must
// hold what the loader and the writers really use.
#include <algorithm>
#include <catch2/catch.hpp>
#include <map>
#include <set>
#include <sstream>

#include "sim/core/error.hpp"
#include "sim/core/strings.hpp"
#include "sim/scenario/scenario_loader.hpp"
#include "sim/sweep/sweep.hpp"
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

// The key paths the Markdown reference lists (first cell of each table row), by section heading.
std::map<std::string, std::vector<std::string>> listed_keys_by_section() {
  const auto r = run_aggsim({"list", "--keys", "--markdown"});
  std::map<std::string, std::vector<std::string>> keys;
  std::string section;
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("## ", 0) == 0) section = line.substr(3);
    if (line.rfind("| `", 0) == 0) keys[section].push_back(line.substr(3, line.find('`', 3) - 3));
  }
  return keys;
}

// The keys a reference's sections list directly under the mapping `at` ("" for the top level):
// "algorithm.graph.kind" is `graph` under "algorithm", `kind` under "algorithm.graph";
// "platform.overrides[].speed" is `overrides` under "platform", `speed` under "platform.overrides[]".
std::set<std::string> listed_under(const std::map<std::string, std::vector<std::string>>& reference,
                                   const std::vector<std::string>& sections, const std::string& at) {
  const std::string prefix = at.empty() ? "" : at + ".";
  std::set<std::string> out;
  for (const auto& section : sections) {
    INFO("section " << section);
    REQUIRE(reference.count(section) == 1);
    for (const auto& key : reference.at(section)) {
      if (key.rfind(prefix, 0) != 0 || key.size() == prefix.size()) continue;
      const std::string name = key.substr(prefix.size(), key.find('.', prefix.size()) - prefix.size());
      out.insert(name.substr(0, name.find("[]")));
    }
  }
  return out;
}

// The keys the loader takes in the mapping where an error about a key it does not know was raised:
// the list its "unknown key" message gives.
std::set<std::string> keys_in_refusal(const std::string& message) {
  const std::string marker = "known keys here: ";
  const auto at = message.find(marker);
  INFO(message);
  REQUIRE(at != std::string::npos);
  std::set<std::string> keys;
  std::stringstream list(message.substr(at + marker.size(), message.find('\n', at) - at - marker.size()));
  for (std::string k; std::getline(list, k, ',');) keys.insert(k.substr(k.find_first_not_of(' ')));
  return keys;
}

constexpr const char* kNoSuchKey = "zz_no_such_key";

// The keys the scenario loader names when it refuses `scenario` (plus `set`) for a key it does not know.
std::set<std::string> keys_named_in_loader_refusal(const std::string& scenario,
                                                   const std::vector<std::string>& set) {
  try {
    aggsim::load_scenario_text(scenario, "probe.yaml", set);
  } catch (const aggsim::InputError& e) {
    return keys_in_refusal(e.what());
  }
  FAIL("the loader took " << kNoSuchKey << " without a word");
  return {};
}

// The keys the scenario loader takes in the mapping `at` of `scenario` (plus `set`), as it says when
// that mapping holds a key nobody takes.
std::set<std::string> keys_the_loader_takes(const std::string& scenario, const std::string& at,
                                            std::vector<std::string> set = {}) {
  set.push_back((at.empty() ? "" : at + ".") + kNoSuchKey + "=1");
  INFO("under '" << at << "'");
  return keys_named_in_loader_refusal(scenario, set);
}

// Checks the mapping `at` and every mapping the reference lists inside it: the loader takes exactly
// the keys the reference's `sections` list there.
void check_keys_taken(const std::map<std::string, std::vector<std::string>>& reference,
                      const std::vector<std::string>& sections, const std::string& scenario,
                      const std::string& at, const std::vector<std::string>& set = {}) {
  const std::set<std::string> listed = listed_under(reference, sections, at);
  INFO("under '" << at << "' of sections " << sections.back());
  CHECK(keys_the_loader_takes(scenario, at, set) == listed);
  for (const auto& key : listed) {
    const std::string inner = at.empty() ? key : at + "." + key;
    if (!listed_under(reference, sections, inner).empty())
      check_keys_taken(reference, sections, scenario, inner, set);
  }
}

}  // namespace

TEST_CASE("scenarios/KEYS.md, sim/output/COLUMNS.md and platforms/SYSTEMS.md are what aggsim prints", "[docs]") {
  check_generated({"list", "--keys", "--markdown"}, "scenarios/KEYS.md");
  check_generated({"list", "--outputs", "--markdown"}, "sim/output/COLUMNS.md");
  check_generated({"list", "--systems", "--markdown"}, "platforms/SYSTEMS.md");
}

TEST_CASE("the key reference lists exactly the keys the loader takes, in every mapping of every choice",
          "[docs]") {
  const auto reference = listed_keys_by_section();
  const std::string base =
      "ranks: 2\nplatform: {topology: cluster, nodes: 2}\nalgorithm: {name: ring_allreduce}\n";
  // The top level (`sweep` is a sweep file's, checked below), model, workload, compute, engine, output.
  std::set<std::string> top = listed_under(reference, {"Top level"}, "");
  top.erase("sweep");
  CHECK(keys_the_loader_takes(base, "") == top);
  check_keys_taken(reference, {"model"}, base, "model");
  check_keys_taken(reference, {"workload"}, base, "workload", {"workload.problem=least_squares"});
  for (const char* section : {"compute", "engine", "parallel", "output"})
    check_keys_taken(reference, {section}, base, section);
  // A platform file takes the platform's own keys but overrides (refused: edit the XML); a generator
  // takes them all and its topology's.
  std::set<std::string> file_keys = listed_under(reference, {"platform"}, "platform");
  file_keys.erase("overrides");
  CHECK(keys_the_loader_takes(base, "platform",
                              {"platform={file: " AGGSIM_SOURCE_DIR "/platforms/cluster_16.xml}"}) ==
        file_keys);
  std::size_t choices = 0;
  for (const auto& [section, keys] : reference) {
    const auto name_at = section.find(": {");
    if (name_at == std::string::npos) continue;
    const std::string kind = section.substr(0, name_at);  // platform, algorithm, compression
    const std::string name = section.substr(section.find(": ", name_at + 3) + 2);
    const std::string chosen = name.substr(0, name.size() - 1);
    ++choices;
    if (kind == "platform") {
      check_keys_taken(reference, {"platform", section}, base, "platform",
                       {"platform={topology: " + chosen + ", nodes: 4}"});
    } else if (kind == "algorithm") {
      const std::string needed = chosen == "msccl" ? ", program: ring_allreduce_8" : "";
      check_keys_taken(reference, {"algorithm", section}, base, "algorithm",
                       {"algorithm={name: " + chosen + needed + "}"});
    } else {
      REQUIRE(kind == "compression");
      check_keys_taken(reference, {"compression", section}, base, "compression",
                       {"compression={name: " + chosen + "}"});
    }
  }
  CHECK(choices > 20);  // the headings were read: 4 topologies, 13 algorithms, 11 compressors
  // An entry of platform.overrides.
  CHECK(keys_named_in_loader_refusal(
            "ranks: 2\nplatform: {topology: cluster, nodes: 2, overrides: [{nodes: "
            "\"0\", speed: 1Gf, zz_no_such_key: 1}]}\nalgorithm: {name: ring_allreduce}\n",
            {}) == listed_under(reference, {"platform"}, "platform.overrides[]"));
  // A sweep file's `sweep:` block.
  try {
    aggsim::expand_sweep_text(base + "sweep: {grid: {ranks: [2]}, zz_no_such_key: 1}\n", "probe.yaml");
    FAIL("the sweep reader took an unknown key");
  } catch (const aggsim::InputError& e) {
    CHECK(keys_in_refusal(e.what()) == listed_under(reference, {"sweep"}, "sweep"));
  }
  // `aggsim list --keys` lists the same keys as its Markdown form (scenarios/KEYS.md).
  std::set<std::string> markdown, text;
  for (const auto& [section, keys] : reference) markdown.insert(keys.begin(), keys.end());
  std::istringstream in(run_aggsim({"list", "--keys"}).out);
  for (std::string line; std::getline(in, line);)
    if (line.rfind("  ", 0) == 0 && line.rfind("  (", 0) != 0)
      text.insert(line.substr(2, line.find(' ', 2) - 2));
  CHECK(text == markdown);
  CHECK(markdown.count("platform.fabric") == 1);  // read by hand once, and missing from the reference
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
  // A workload with a target and a calibration: every field present, but those of sharded data
  // parallelism's runs (ring all-reduce has no parameter gathers).
  std::vector<std::string> expected = listed.at("summary.json");
  expected.erase(std::remove(expected.begin(), expected.end(), "exposed_gather_time_s"), expected.end());
  CHECK(fields == expected);
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

TEST_CASE("a Markdown table cell escapes every pipe, and angle brackets outside code spans", "[docs]") {
  // GitHub's tables end a cell at any unescaped `|`, code spans included; outside them `<x>` is a tag.
  CHECK(aggsim::markdown_cell("a | b <i> `<x> | y` >") == "a \\| b &lt;i&gt; `<x> \\| y` &gt;");
  CHECK(aggsim::markdown_cell("plain") == "plain");
}

TEST_CASE("the network presets' table in scenarios/README.md gives the SimGrid settings aggsim list prints",
          "[docs]") {
  // `aggsim list`: "  alpha_beta   --cfg=network/model:CM02 --cfg=..." under "Network presets".
  std::vector<std::string> printed_names;
  std::map<std::string, std::set<std::string>> printed;
  {
    const std::string out = run_aggsim({"list"}).out;
    const auto at = out.find("Network presets (network):\n");
    REQUIRE(at != std::string::npos);
    std::istringstream in(out.substr(at));
    std::string line;
    std::getline(in, line);
    while (std::getline(in, line) && line.rfind("  ", 0) == 0) {
      std::istringstream words(line);
      std::string name, word;
      words >> name;
      printed_names.push_back(name);
      printed[name];
      while (words >> word)
        if (word.rfind("--cfg=", 0) == 0) printed[name].insert(word.substr(6));
    }
  }
  // The README's table: the preset (first code span of a row), and the code spans of its settings
  // that are SimGrid settings with a value ("network/model:CM02").
  std::vector<std::string> documented_names;
  std::map<std::string, std::set<std::string>> documented;
  {
    const std::string readme = read_file(fs::path(AGGSIM_SOURCE_DIR) / "scenarios/README.md");
    const auto at = readme.find("### Network presets\n");
    REQUIRE(at != std::string::npos);
    std::istringstream in(readme.substr(at));
    std::string line;
    for (int i = 0; i < 3; ++i) std::getline(in, line);  // heading, table header, ---
    while (std::getline(in, line) && line.rfind("| `", 0) == 0) {
      const std::string name = line.substr(3, line.find('`', 3) - 3);
      documented_names.push_back(name);
      documented[name];
      const auto first = line.find('|', 1), second = line.find('|', first + 1);
      const std::string settings = line.substr(first, second - first);
      for (auto open = settings.find('`'); open != std::string::npos;
           open = settings.find('`', settings.find('`', open + 1) + 1)) {
        const std::string span = settings.substr(open + 1, settings.find('`', open + 1) - open - 1);
        const auto slash = span.find('/'), colon = span.find(':');
        if (slash != std::string::npos && colon != std::string::npos && slash < colon &&
            span.find(' ') == std::string::npos)
          documented[name].insert(span);
      }
    }
  }
  CHECK(documented_names == printed_names);
  for (const auto& [name, settings] : printed) {
    INFO(name);
    CHECK(documented[name] == settings);
  }
  CHECK(printed.at("alpha_beta").count("network/model:CM02") == 1);  // the parsing found the settings
}
