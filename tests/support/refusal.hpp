#pragma once
// An input error as users meet it: `aggsim run` and `aggsim validate` both refuse the scenario with
// exit code 2 and a message naming where, and leave nothing behind (no output folder).
#include <catch2/catch.hpp>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "support/cli.hpp"

namespace aggsim::test {

// Writes `scenario` as bad.yaml (and `other_files`, name -> text) into a fresh folder; runs both
// verbs there and checks the exit code, that stderr holds every text of `expected`, and that the
// folder holds only the files written.
inline void check_refused(const std::string& scenario, const std::vector<std::string>& expected,
                          const std::map<std::string, std::string>& other_files = {}) {
  for (const std::string verb : {"run", "validate"}) {
    INFO(verb << " of\n" << scenario);
    const auto dir = fresh_dir("refused");
    write_file(dir / "bad.yaml", scenario);
    std::set<std::string> written = {"bad.yaml"};
    for (const auto& [name, text] : other_files) {
      write_file(dir / name, text);
      written.insert(name);
    }
    std::vector<std::string> args = {verb, "bad.yaml"};
    if (verb == "run") args.insert(args.end(), {"--out", "out"});
    const auto r = run_aggsim(args, dir);
    INFO("stderr: " << r.err);
    CHECK(r.exit_code == 2);
    for (const auto& needle : expected) CHECK(r.err.find(needle) != std::string::npos);
    std::set<std::string> entries;
    for (const auto& e : std::filesystem::directory_iterator(dir))
      entries.insert(e.path().filename().string());
    CHECK(entries == written);
    std::filesystem::remove_all(dir);
  }
}

}  // namespace aggsim::test
