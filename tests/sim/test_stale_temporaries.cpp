// Temporaries of dead writers are removed when a later run writes beside them
// (sim/output/run_folder.hpp), including a writer killed while its parent was killed too, which
// stays a zombie until someone reaps it: the temporaries of a sweep killed mid-point.
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <csignal>
#include <filesystem>
#include <string>

#include "sim/output/run_folder.hpp"
#include "support/cli.hpp"

namespace fs = std::filesystem;

namespace {

// This process's temporary name for `name`, with `pid` in place of its own.
std::string temporary_of(pid_t pid, const std::string& name) {
  std::string t = aggsim::temporary_name(name, "tmp");
  return t.substr(0, t.rfind('-') + 1) + std::to_string(pid);
}

}  // namespace

TEST_CASE("a zombie's temporaries are stale, a running process's are not", "[outputs][safety]") {
  const fs::path dir = aggsim::test::fresh_dir("stale");
  const pid_t zombie = ::fork();
  REQUIRE(zombie >= 0);
  if (zombie == 0) ::_exit(0);
  const pid_t sleeper = ::fork();
  REQUIRE(sleeper >= 0);
  if (sleeper == 0) {
    ::pause();
    ::_exit(0);
  }
  // Let the first child exit and stay unreaped.
  siginfo_t info{};
  REQUIRE(::waitid(P_PID, static_cast<id_t>(zombie), &info, WEXITED | WNOWAIT) == 0);
  fs::create_directory(dir / temporary_of(zombie, "a"));
  fs::create_directory(dir / temporary_of(sleeper, "b"));
  fs::create_directory(dir / temporary_of(::getpid(), "c"));

  aggsim::remove_stale_temporaries(dir);
  CHECK_FALSE(fs::exists(dir / temporary_of(zombie, "a")));
  CHECK(fs::exists(dir / temporary_of(sleeper, "b")));
  CHECK(fs::exists(dir / temporary_of(::getpid(), "c")));

  ::kill(sleeper, SIGKILL);
  ::waitpid(sleeper, nullptr, 0);
  ::waitpid(zombie, nullptr, 0);
  aggsim::remove_stale_temporaries(dir);
  CHECK_FALSE(fs::exists(dir / temporary_of(sleeper, "b")));
}
