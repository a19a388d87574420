// The table of compressors in algorithms/compression/README.md is written for people (the encoding
// and its wire bytes in words); what the code decides is checked against the compressors themselves:
// the names and their order, unbiased, summable, and each key with its default.
#include <catch2/catch.hpp>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "compressor_fixture.hpp"
#include "support/cli.hpp"

using namespace aggsim;
using namespace aggsim::test;

namespace {

// The cells of a Markdown table row ("| a | b \| c |" -> {"a", "b \| c"}), trimmed.
std::vector<std::string> cells_of(const std::string& row) {
  std::vector<std::string> cells;
  std::string cell;
  for (std::size_t i = 1; i < row.size(); ++i) {
    if (row[i] == '|' && row[i - 1] != '\\') {
      const auto first = cell.find_first_not_of(' '), last = cell.find_last_not_of(' ');
      cells.push_back(first == std::string::npos ? "" : cell.substr(first, last - first + 1));
      cell.clear();
    } else {
      cell += row[i];
    }
  }
  return cells;
}

// The rows of the table whose header is `header`, each as its cells.
std::vector<std::vector<std::string>> table_rows(const std::string& markdown, const std::string& header) {
  const auto at = markdown.find(header);
  REQUIRE(at != std::string::npos);
  std::vector<std::vector<std::string>> rows;
  std::istringstream in(markdown.substr(at));
  std::string line;
  std::getline(in, line);  // the header
  std::getline(in, line);  // | --- | ...
  while (std::getline(in, line) && line.rfind("|", 0) == 0) rows.push_back(cells_of(line));
  return rows;
}

// "`ratio` (0.01), `levels` s (16)" -> {ratio: "0.01", levels: "16"}: each key and the first word in
// the brackets after it.
std::map<std::string, std::string> documented_defaults(const std::string& cell) {
  std::map<std::string, std::string> keys;
  for (std::size_t at = cell.find('`'); at != std::string::npos; at = cell.find('`', cell.find(')', at))) {
    const auto end = cell.find('`', at + 1);
    const auto open = cell.find('(', end);
    REQUIRE(open != std::string::npos);
    const std::string inside = cell.substr(open + 1, cell.find(')', open) - open - 1);
    keys[cell.substr(at + 1, end - at - 1)] = inside.substr(0, inside.find(' '));
  }
  return keys;
}

// What the summable column says of `info`, from the compressor's behaviour.
std::string summable_text(const CompressorInfo& info) {
  if (info.reducing_transport != "compressed_reduction") return "own aggregation";
  if (make_compressor(info.name)->summable()) return "yes";
  for (const auto& spec : info.params)
    if (spec.kind == ParamKind::boolean && spec.default_text == "false" && spec.key != "error_feedback" &&
        make_compressor(info.name, {{spec.key, "true"}})->summable())
      return "only with `" + spec.key + "`";
  return "no";
}

}  // namespace

TEST_CASE("the README's table of compressors says what each compressor does: order, bias, summing, keys",
          "[docs]") {
  const std::string readme = read_file(std::string(AGGSIM_SOURCE_DIR) + "/algorithms/compression/README.md");
  const auto rows =
      table_rows(readme, "| name | encoding | wire bytes | unbiased | summable | keys (default) |");
  std::vector<std::string> listed, compressors;
  for (const auto& row : rows) listed.push_back(row.at(0));
  for (const auto& info : compressor_table()) compressors.push_back("`" + info.name + "`");
  REQUIRE(listed == compressors);
  for (const auto& row : rows) {
    REQUIRE(row.size() == 6);
    const CompressorInfo& info = *find_compressor(row[0].substr(1, row[0].size() - 2));
    INFO(info.name);
    const bool unbiased = row[3].rfind("yes", 0) == 0;
    CHECK((unbiased || row[3].rfind("no", 0) == 0));
    CHECK(make_compressor(info.name)->unbiased() == unbiased);
    CHECK(row[4] == summable_text(info));
    // The keys, but memory and error_feedback, which the text under the table gives for all.
    const auto documented = documented_defaults(row[5]);
    std::map<std::string, std::string> keys;
    for (const auto& spec : info.params)
      if (spec.key != "memory" && spec.key != "error_feedback") keys[spec.key] = spec.default_text;
    CHECK(documented.size() == keys.size());
    for (const auto& spec : info.params) {
      if (!keys.count(spec.key)) continue;
      INFO(spec.key);
      REQUIRE(documented.count(spec.key) == 1);
      CHECK(format_param(spec, parse_param(spec, documented.at(spec.key))) ==
            format_param(spec, parse_param(spec, spec.default_text)));
    }
    // "Every compressor except `none` also takes `memory` (...) and its shorthand `error_feedback`".
    int memory_keys = 0;
    for (const auto& spec : info.params) memory_keys += spec.key == "memory" || spec.key == "error_feedback";
    CHECK(memory_keys == (info.name == "none" ? 0 : 2));
  }
  CHECK(readme.find("Every compressor except `none` also takes `memory`") != std::string::npos);
}
