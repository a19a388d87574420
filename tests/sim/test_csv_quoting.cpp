// Every CSV aggsim writes quotes the fields that need it (RFC 4180): checked by reading the files
// back with Python's csv module, an independent reader.
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "sim/core/strings.hpp"
#include "support/cli.hpp"

using namespace aggsim::test;
namespace fs = std::filesystem;

namespace {

// The rows of a CSV file as Python's csv module reads them.
nlohmann::json python_csv_rows(const fs::path& file) {
  const auto dir = fresh_dir("csv-python");
  const std::string cmd = fmt::format(
      "/usr/bin/python3 -c 'import csv, json, sys; print(json.dumps(list(csv.reader(open(sys.argv[1], "
      "newline=\"\")))))' {} > {}",
      shell_quote(file.string()), shell_quote((dir / "rows.json").string()));
  REQUIRE(std::system(cmd.c_str()) == 0);
  return nlohmann::json::parse(read_file(dir / "rows.json"));
}

}  // namespace

TEST_CASE("csv_row quotes commas and quotes and line breaks so that a CSV reader gets the fields back",
          "[csv]") {
  const std::vector<std::string> fields = {"plain", "a,b", "say \"hi\"", "two\nlines",
                                           "",      "\"",  "cr\r",       " x "};
  const auto dir = fresh_dir("csv-row");
  write_file(dir / "t.csv", aggsim::csv_row(fields) + aggsim::csv_row({"1", "2.5e-07"}));
  const auto rows = python_csv_rows(dir / "t.csv");
  REQUIRE(rows.size() == 2);
  CHECK(rows[0].get<std::vector<std::string>>() == fields);
  CHECK(rows[1].get<std::vector<std::string>>() == std::vector<std::string>{"1", "2.5e-07"});
  CHECK(aggsim::csv_row({"a", "b"}) == "a,b\n");  // nothing to quote: unchanged
}

TEST_CASE("links.csv keeps a link named with a comma and a quote in one cell", "[csv]") {
  const auto dir = fresh_dir("csv-links");
  write_file(dir / "p.xml", R"(<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1">
  <zone id="z" routing="Full">
    <host id="h0" speed="1Gf"/>
    <host id="h1" speed="1Gf"/>
    <link id="wire, &quot;a&quot;" bandwidth="1GBps" latency="1us"/>
    <link id="back" bandwidth="1GBps" latency="1us"/>
    <route src="h0" dst="h1" symmetrical="NO"><link_ctn id="wire, &quot;a&quot;"/></route>
    <route src="h1" dst="h0" symmetrical="NO"><link_ctn id="back"/></route>
  </zone>
</platform>
)");
  write_file(dir / "s.yaml", R"(name: 'quoted, "name"'
ranks: 2
steps: 1
platform: {file: p.xml}
model: {size: 1MB, proxy_dim: 8}
algorithm: {name: ring_allreduce}
output: {trace: true}
)");
  const auto r = run_aggsim({"run", (dir / "s.yaml").string(), "--out", (dir / "out").string(), "-q"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto rows = python_csv_rows(dir / "out" / "links.csv");
  bool found = false;
  for (const auto& row : rows) {
    CHECK(row.size() == rows[0].size());
    if (row[0] == "wire, \"a\"") {
      found = true;
      CHECK(row[3] == "1000000");  // ring of 2: each rank sends S/2 twice; h0 -> h1 half of it
      CHECK(row[7] == "h0");       // end_a: the route from h0 starts with it
      CHECK(row[8] == "h1");
    }
  }
  CHECK(found);
  const auto summary = nlohmann::json::parse(read_file(dir / "out" / "summary.json"));
  CHECK(summary["scenario"] == "quoted, \"name\"");
}
