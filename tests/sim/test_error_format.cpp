// One error format for every input: "aggsim: error: FILE:LINE[:COL]: key: message" for files
// (platform XML with its column, empty files at 1:1, duplicate sweep points at the value that has no
// effect), "aggsim: error: --option: message" for the command line, and unprintable bytes of a path
// written as \xNN instead of reaching the terminal or cutting the message short.
#include <catch2/catch.hpp>
#include <filesystem>
#include <regex>
#include <string>

#include "support/cli.hpp"
#include "support/scenarios.hpp"

using namespace aggsim::test;
namespace fs = std::filesystem;

namespace {

void check_error(const CliResult& r, const std::string& text) {
  INFO(r.err);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::StartsWith("aggsim: error: " + text));
}

}  // namespace

TEST_CASE("command-line errors read 'aggsim: error: --option: message'", "[input][cli]") {
  const auto dir = fresh_dir("cli-errors");
  write_file(dir / "s.yaml", kSmallScenario);
  check_error(run_aggsim({"sweep", "slurm", "s.yaml", "--grid", "ranks=2,4", "--chunk", "0"}, dir),
              "--chunk: Value 0 not in range");
  check_error(run_aggsim({"run", "s.yaml", "--bogus"}, dir),
              "--bogus: not an option or argument of this command");
  check_error(run_aggsim({"run", "s.yaml", "--out"}, dir), "--out: 1 required TEXT missing");
  check_error(run_aggsim({"run", "s.yaml", "--progress", "--no-progress"}, dir),
              "--progress: excludes --no-progress");
  check_error(run_aggsim({"run"}, dir), "scenario: is required");
  check_error(run_aggsim({"compare", "s.yaml", "m.csv", "--ranks", "x"}, dir), "--ranks:");
  check_error(run_aggsim({"frob"}, dir),
              "frob: not an aggsim command (run, validate, list, sweep, calibrate");
  check_error(run_aggsim({"sweep", "frob", "s.yaml"}, dir),
              "sweep frob: not a sweep verb (expand, run, slurm, merge)");
}

TEST_CASE("file errors carry FILE:LINE:COL: empty files, platform XML, duplicate sweep points",
          "[input][format]") {
  const auto dir = fresh_dir("file-errors");
  write_file(dir / "empty.yaml", "");
  write_file(dir / "comments.yaml", "# nothing but a comment\n");
  check_error(run_aggsim({"validate", "empty.yaml"}, dir),
              "empty.yaml:1:1: (top level): the scenario is empty");
  check_error(run_aggsim({"validate", "comments.yaml"}, dir),
              "comments.yaml:1:1: (top level): the scenario is empty");
  write_file(dir / "s.yaml",
             "ranks: 2\nplatform: {file: p.xml}\nmodel: {size: 1MB}\nalgorithm: {name: ring_allreduce}\n");
  const std::string head =
      "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n";
  const std::vector<std::pair<std::string, std::string>> platforms = {
      {head + "<html>\n  <body/>\n</html>\n",
       "p.xml:3:1: not a SimGrid platform: the root element is not <platform>"},
      {"", "p.xml:1:1: not a SimGrid platform: no XML element found"},
      {head + "<platform version=\"4.1\">\n  <zone id=\"z\" routing=\"Full\">\n    <host id=\"a\" "
              "speed=\"1Gf\"\n"
              "  </zone>\n</platform>\n",
       "p.xml:6:3: malformed platform XML"},
      {head + "<platform version=\"4.1\">\n  <zone id=\"z\" routing=\"Fast\">\n  </zone>\n</platform>\n",
       "p.xml:4:3: <zone>: unknown routing 'Fast'"},
      {head + "<platform version=\"4.1\">\n  <zone id=\"z\" routing=\"Full\">\n    <host id=\"a\" "
              "speed=\"1Gf\"/>"
              "<host id=\"a\" speed=\"1Gf\"/>\n  </zone>\n</platform>\n",
       "p.xml:5:31: <host>: duplicate host id 'a'"},
      // An end tag that does not match: SimGrid's lexer gave the line only.
      {head + "<platform version=\"4.1\">\n  <zone id=\"z\" routing=\"Full\">\n  </zne>\n</platform>\n",
       "p.xml:5:8: malformed platform XML: invalid closing tag name"},
      // No DOCTYPE: SimGrid's lexer refuses the file with "Unexpected character `<' in prolog.".
      {"<platform version=\"4.1\">\n  <zone id=\"z\" routing=\"Full\">\n  </zone>\n</platform>\n",
       "p.xml:1:1: Unexpected character `<' in prolog. (a SimGrid 3.32 platform begins with <?xml "
       "version='1.0'?> and then <!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">)"},
      // SimGrid's two-line message stays one line, with no escaped line break.
      {"<!DOCTYPE platform>\n<platform version=\"4.1\">\n</platform>\n",
       "p.xml:1:1: Bad declaration <!DOCTYPE platform>. If you are using an XML v3 file"},
  };
  for (const auto& [xml, error] : platforms) {
    INFO(error);
    write_file(dir / "p.xml", xml);
    check_error(run_aggsim({"validate", "s.yaml"}, dir), error);
  }
  // A compressor that is not summable on a reducing collective: at `compression` in the file, at
  // the option that made it when only --set did.
  write_file(dir / "topk.yaml", std::string(kSmallScenario) + "compression:\n  name: topk\n");
  check_error(run_aggsim({"validate", "topk.yaml"}, dir),
              "topk.yaml:14:3: compression: compressor 'topk' is not summable, so 'ring_allreduce'");
  write_file(dir / "small.yaml", kSmallScenario);
  check_error(run_aggsim({"validate", "small.yaml", "--set", "compression.name=topk"}, dir),
              "--set compression.name=topk: compression: compressor 'topk' is not summable");
  // Two swept values that make the same scenario: the second one is named where it is written.
  write_file(dir / "sw.yaml",
             std::string(kSmallScenario) + "sweep:\n  grid:\n    model.size: [1MB, 1000kB]\n");
  check_error(
      run_aggsim({"sweep", "expand", "sw.yaml", "--out", "sweep"}, dir),
      "sw.yaml:15:23: model.size: sweep points 1 (model.size=1MB) and 2 (model.size=1000kB) are the same");
}

TEST_CASE("unprintable bytes of paths are escaped, and a NUL in a path is refused", "[input][format]") {
  const auto dir = fresh_dir("unprintable");
  write_file(dir / "p.xml", "not read\n");  // what a path cut at its NUL would have named
  // YAML's escapes put an escape sequence, a tab, a bidirectional override and a NUL into paths.
  write_file(dir / "esc.yaml",
             "ranks: 2\nplatform: {file: \"p\\e[31m\\tx\\u202e.xml\"}\nalgorithm: {name: ring_allreduce}\n");
  write_file(dir / "nul.yaml",
             "ranks: 2\nplatform: {file: \"p.xml\\0.xml\"}\nalgorithm: {name: ring_allreduce}\n");
  auto r = run_aggsim({"validate", "esc.yaml"}, dir);
  check_error(r,
              "esc.yaml:2:18: platform.file: platform file not found (looked for "
              "p\\x1B[31m\\x09x\\xE2\\x80\\xAE.xml");
  for (const char c : r.err) CHECK((c == '\n' || (static_cast<unsigned char>(c) >= 0x20 && c != 0x7f)));
  r = run_aggsim({"validate", "nul.yaml"}, dir);
  check_error(r, "nul.yaml:2:18: platform.file: p.xml\\x00.xml: the platform file's path holds a NUL byte");
  CHECK_THAT(r.err, Catch::EndsWith("\n"));
  // From the command line too (an output folder under a file).
  write_file(dir / "s.yaml", kSmallScenario);
  r = run_aggsim({"run", "s.yaml", "--out", "p.xml/\x1b[2Jrun"}, dir);
  INFO(r.err);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains("p.xml/\\x1B[2Jrun"));
  CHECK(r.err.find('\x1b') == std::string::npos);
  // What a successful run and validate print shows the scenario's name and paths escaped too: a
  // scenario someone sends cannot drive the terminal.
  write_file(dir / "named.yaml",
             std::string(kSmallScenario) + "name: \"a\\e[2Jb\"\noutput: {dir: \"o\\e[31m\"}\n");
  for (const std::string verb : {"validate", "run"}) {
    r = run_aggsim({verb, "named.yaml"}, dir);
    INFO(r.out << r.err);
    CHECK(r.exit_code == 0);
    CHECK((r.out + r.err).find('\x1b') == std::string::npos);
  }
  CHECK_THAT(r.err, Catch::Contains("aggsim: running a\\x1B[2Jb:"));
  CHECK_THAT(r.out, Catch::Contains("outputs: o\\x1B[31m/"));
  CHECK(fs::exists(dir / "o\x1b[31m/summary.json"));
}
