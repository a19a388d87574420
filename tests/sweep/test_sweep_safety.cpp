// Sweeps cannot be turned against the user: generated Slurm scripts run no text from the scenario,
// --point names only points, and options that cannot be written safely are refused.
#include <catch2/catch.hpp>

#include "sweep_support.hpp"

using namespace aggsim::test;
namespace fs = std::filesystem;

namespace {

// Files whose name shows that an injected command ran.
std::vector<std::string> pwned_files(const fs::path& dir) {
  std::vector<std::string> found;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.path().filename().string().rfind("PWNED", 0) == 0) found.push_back(e.path().string());
  return found;
}

// Runs array task `task` of a generated script with bash, as Slurm would (only the environment).
int run_task(const fs::path& script, int task, const fs::path& cwd) {
  const std::string cmd = "cd " + shell_quote(cwd.string()) +
                          " && env SLURM_ARRAY_JOB_ID=77 SLURM_ARRAY_TASK_ID=" + std::to_string(task) +
                          " bash " + shell_quote(script.string()) + " >" +
                          shell_quote((cwd / "task.log").string()) + " 2>&1";
  const int status = std::system(cmd.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

const char* kHostile = "x\n touch PWNED_nl; $(touch PWNED_subst) `touch PWNED_tick` ' \" ; touch PWNED_semi";

std::string yaml_quoted(const std::string& s) {
  std::string q = "\"";
  for (char c : s) q += c == '\n' ? std::string("\\n") : c == '"' ? std::string("\\\"") : std::string(1, c);
  return q + "\"";
}

}  // namespace

TEST_CASE("a Slurm script built from hostile names and swept descriptions runs none of them",
          "[sweep][safety]") {
  const auto dir = fresh_dir("inject");
  // The name and each point's description carry shell; the ids and paths are ordinary.
  std::string text =
      small_sweep("  zip:\n    ranks: [2, 4]\n    description: [" + yaml_quoted(kHostile) + ", " +
                  yaml_quoted(std::string("$(touch PWNED_desc)\n`touch PWNED_desc2`")) + "]\n  out: swept\n");
  text.replace(text.find("name: small"), 11, "name: " + yaml_quoted(kHostile));
  write_file(dir / "sweep.yaml", text);
  const auto r = run_aggsim({"sweep", "slurm", "sweep.yaml"}, dir);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  fs::path script;
  for (const auto& e : fs::directory_iterator(dir / "swept/slurm"))
    if (e.path().extension() == ".sbatch") script = e.path();
  REQUIRE(!script.empty());
  const std::string body = read_file(script);
  INFO(body);
  CHECK(body.find("$(touch") == std::string::npos);
  CHECK(body.find("`touch") == std::string::npos);
  for (std::size_t at = body.find("#SBATCH"); at != std::string::npos; at = body.find("#SBATCH", at + 1))
    CHECK(body.substr(at + 8, body.find('\n', at) - at - 8).find_first_of(" '\"$`;") == std::string::npos);
  REQUIRE(run_task(script, 0, dir) == 0);
  REQUIRE(run_task(script, 1, dir) == 0);
  CHECK(pwned_files(dir).empty());
  CHECK(finished_points(dir / "swept").size() == 2);
}

TEST_CASE("hostile Slurm options and output folders are refused before anything is written",
          "[sweep][safety]") {
  const auto dir = fresh_dir("inject-options");
  write_file(dir / "sweep.yaml", small_sweep("  grid:\n    ranks: [2, 4]\n"));
  const std::vector<std::vector<std::string>> cases = {
      {"--partition", "debug\n#SBATCH --wrap=touch PWNED"},
      {"--partition", "p;touch PWNED"},
      {"--time", "1:00; touch PWNED"},
      {"--time", "90 minutes"},
      {"--mem", "4G\ntouch PWNED"},
      {"--account", "a b"},
      {"--sbatch=--comment=x\ntouch PWNED"},
      {"--sbatch=touch PWNED"},
      {"--out", "o$(touch PWNED)"},
      {"--out", "o\ntouch PWNED"},
      // 100 KB values: std::regex recursed once per character and overflowed the stack (from 50 KB).
      {"--partition", std::string(100000, 'a')},
      {"--account", std::string(100000, 'a')},
      {"--mem", std::string(100000, '1')},
      {"--time", std::string(100000, '1')},
  };
  for (const auto& extra : cases) {
    std::vector<std::string> args = {"sweep", "slurm", "sweep.yaml"};
    args.insert(args.end(), extra.begin(), extra.end());
    const auto r = run_aggsim(args, dir);
    INFO(extra.front() << " " << (extra.size() > 1 ? extra[1] : ""));
    INFO(r.err);
    CHECK(r.exit_code == 2);
    const std::string option = extra.front().substr(0, extra.front().find('='));
    CHECK_THAT(r.err,
               Catch::StartsWith("aggsim: error: " + (option == "--out" ? std::string() : option + ": ")));
  }
  CHECK(!fs::exists(dir / "out"));
  CHECK(pwned_files(dir).empty());
  // Slurm's time formats are accepted.
  for (const char* time : {"30", "30:00", "01:30:00", "2-00", "2-12:00", "1-00:00:00", "UNLIMITED"}) {
    INFO(time);
    CHECK(run_aggsim({"sweep", "slurm", "sweep.yaml", "--time", time}, dir).exit_code == 0);
  }
}

TEST_CASE("sweep run --point takes only point ids of the sweep", "[sweep][safety]") {
  const auto dir = fresh_dir("point-id");
  write_file(dir / "sub/sweep.yaml", small_sweep("  grid:\n    ranks: [2, 4]\n"));
  for (const char* bad : {"../../x", "../runs", "ABCDEF012345", "0123456789ab/", "", "0123456789abc"}) {
    INFO(bad);
    const auto r = run_aggsim({"sweep", "run", "sub/sweep.yaml", "--point", bad, "--out", "sub/out"}, dir);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Catch::Contains("point"));
  }
  // Twelve hex digits but not a point of this sweep.
  const auto r =
      run_aggsim({"sweep", "run", "sub/sweep.yaml", "--point", "0123456789ab", "--out", "sub/out"}, dir);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains("no point with id 0123456789ab"));
  CHECK(!fs::exists(dir / "x"));
  CHECK(!fs::exists(dir / "sub/out/failed"));
  CHECK(!fs::exists(dir / "sub/out/runs"));
}

TEST_CASE("escape sequences in a sweep's name, values and folder reach the terminal escaped",
          "[sweep][safety]") {
  const auto dir = fresh_dir("sweep-escapes");
  std::string text =
      small_sweep("  zip:\n    ranks: [2, 4]\n    description: [\"a\\e[2J\", b]\n  out: \"sw\\e[31m\"\n");
  text.replace(text.find("name: small"), 11, "name: \"s\\e]0;title\\a\"");
  write_file(dir / "sweep.yaml", text);
  for (const std::string verb : {"expand", "run", "merge", "slurm"}) {
    std::vector<std::string> args = {"sweep", verb, "sweep.yaml"};
    if (verb == "run") args.insert(args.end(), {"--jobs", "1"});
    const auto r = run_aggsim(args, dir);
    INFO(verb << ": " << r.out << r.err);
    // slurm refuses the folder: its path goes on an #SBATCH line, which cannot be quoted.
    CHECK(r.exit_code == (verb == "slurm" ? 2 : 0));
    CHECK((r.out + r.err).find_first_of("\x1b\x07") == std::string::npos);
    if (verb == "run") {
      CHECK_THAT(r.err, Catch::Contains("sweep s\\x1B]0;title\\x07: 2 points"));
      CHECK_THAT(r.err, Catch::Contains("-> sw\\x1B[31m"));
    }
  }
  CHECK(finished_points(dir / "sw\x1b[31m").size() == 2);
}
