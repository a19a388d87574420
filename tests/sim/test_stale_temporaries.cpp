// Temporaries of dead writers are removed when a later run writes beside them
// (sim/output/temporary.hpp), including a writer killed while its parent was killed too, which
// stays a zombie until someone reaps it: the temporaries of a sweep killed mid-point. Anything that
// only looks like a temporary (the names users give their own files, a temporary whose proof was
// tampered with) is never touched.
#include <limits.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <csignal>
#include <filesystem>
#include <map>
#include <string>

#include "sim/output/temporary.hpp"
#include "support/cli.hpp"

namespace fs = std::filesystem;
using namespace aggsim::test;

namespace {

// A process that makes a temporary for `name` in `dir`, prints nothing and then waits to be killed,
// or ends at once (`linger` false) without removing it, as a SIGKILL would leave it.
pid_t writer(const fs::path& dir, const std::string& name, bool linger) {
  int ready[2];
  REQUIRE(::pipe(ready) == 0);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::close(ready[0]);
    new aggsim::Temporary(dir, name);  // never destroyed: the process ends without cleaning up
    const char ok = 1;
    if (::write(ready[1], &ok, 1) != 1) ::_exit(1);
    if (linger) ::pause();
    ::_exit(0);
  }
  ::close(ready[1]);
  char ok = 0;
  REQUIRE(::read(ready[0], &ok, 1) == 1);
  ::close(ready[0]);
  return pid;
}

// The temporaries in `dir` whose names mention `name`.
std::vector<fs::path> temporaries_of(const fs::path& dir, const std::string& name) {
  std::vector<fs::path> found;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().rfind("." + name + ".tmp-", 0) == 0) found.push_back(e.path());
  return found;
}

std::string this_host() {
  char host[HOST_NAME_MAX + 1] = {};
  ::gethostname(host, sizeof host - 1);
  std::string me(host);
  for (char& c : me)
    if (c == '/' || c == '-') c = '_';
  return me;
}

pid_t dead_pid() {
  const pid_t pid = ::fork();  // a pid that surely belongs to no process now
  if (pid == 0) ::_exit(0);
  ::waitpid(pid, nullptr, 0);
  return pid;
}

// Names in `dir`, recursively, with their content (a symbolic link as its target).
std::map<std::string, std::string> snapshot(const fs::path& dir) {
  std::map<std::string, std::string> files;
  for (auto it = fs::recursive_directory_iterator(dir); it != fs::recursive_directory_iterator(); ++it) {
    const auto& e = *it;
    const std::string name = fs::relative(e.path(), dir).string();
    if (e.is_symlink())
      files[name] = "-> " + fs::read_symlink(e.path()).string();
    else
      files[name] = e.is_regular_file() ? read_file(e.path()) : "<dir>";
  }
  return files;
}

}  // namespace

TEST_CASE("a zombie's temporaries are stale, a running process's are not", "[outputs][safety]") {
  const fs::path dir = fresh_dir("stale");
  const pid_t zombie = writer(dir, "a", false);
  const pid_t sleeper = writer(dir, "b", true);
  // Let the first child exit and stay unreaped.
  siginfo_t info{};
  REQUIRE(::waitid(P_PID, static_cast<id_t>(zombie), &info, WEXITED | WNOWAIT) == 0);
  const aggsim::Temporary mine(dir, "c");
  REQUIRE(temporaries_of(dir, "a").size() == 1);
  REQUIRE(temporaries_of(dir, "b").size() == 1);

  CHECK(aggsim::remove_stale_temporaries(dir) == 1);
  CHECK(temporaries_of(dir, "a").empty());
  CHECK(temporaries_of(dir, "b").size() == 1);
  CHECK(fs::exists(mine.path()));

  ::kill(sleeper, SIGKILL);
  ::waitpid(sleeper, nullptr, 0);
  ::waitpid(zombie, nullptr, 0);
  CHECK(aggsim::remove_stale_temporaries(dir) == 1);
  CHECK(temporaries_of(dir, "b").empty());
  CHECK(fs::exists(mine.path()));
}

TEST_CASE("files and folders that only look like temporaries are never removed", "[outputs][safety]") {
  const fs::path dir = fresh_dir("lookalikes");
  const std::string me = this_host(), dead = std::to_string(dead_pid());
  const std::string token(32, 'a');
  // What users name their own things (the names that an earlier cleanup deleted), on this host and
  // with pids that run no process.
  write_file(dir / ".mydata.old-vm-999999/data.csv", "a month of results\n");
  write_file(dir / ".notes.old-vm-123456", "notes\n");
  write_file(dir / (".thesis.tmp-" + me + "-4000000/chapter1.tex"), "\\chapter{One}\n");
  write_file(dir / (".draft.tmp-" + me + "-" + dead + "/text"), "draft\n");
  write_file(dir / (".draft.old-" + me + "-" + dead + "/text"), "old draft\n");
  // Names of the full form whose proof does not hold: no marker, a marker with other text, a marker
  // that is a symbolic link to a genuine one, a marker naming another token, a plain file.
  const auto full = [&](const std::string& name, const std::string& t = std::string(32, 'a')) {
    return dir / ("." + name + ".tmp-" + me + "-" + dead + "-" + t);
  };
  write_file(full("nomarker") / "keep", "keep\n");
  write_file(full("othertext") / aggsim::kTemporaryMarker, "aggsim temporary\n");
  write_file(full("othertext") / "keep", "keep\n");
  write_file(dir / "genuine-marker", aggsim::temporary_marker_text(token));
  fs::create_directories(full("linked"));
  fs::create_symlink(dir / "genuine-marker", full("linked") / aggsim::kTemporaryMarker);
  write_file(full("othertoken") / aggsim::kTemporaryMarker,
             aggsim::temporary_marker_text(std::string(32, 'b')));
  write_file(full("plainfile"), aggsim::temporary_marker_text(token));
  // The start of a genuine marker is proof only in a folder that holds nothing else.
  write_file(full("halfmarker") / aggsim::kTemporaryMarker, aggsim::temporary_marker_text(token).substr(0, 20));
  write_file(full("halfmarker") / "keep", "keep\n");
  write_file(full("emptymarker") / aggsim::kTemporaryMarker, "");
  write_file(full("emptymarker") / "keep", "keep\n");
  // A symbolic link named like a temporary, to a folder that holds a genuine marker.
  write_file(dir / "real/keep", "keep\n");
  write_file(dir / "real" / aggsim::kTemporaryMarker, aggsim::temporary_marker_text(token));
  fs::create_symlink(dir / "real", full("symlink"));
  const auto before = snapshot(dir);

  CHECK(aggsim::remove_stale_temporaries(dir) == 0);
  CHECK(snapshot(dir) == before);
  // The same through the binary: a new run folder written beside them, as a user runs it.
  write_file(dir / "s.yaml",
             "ranks: 2\nsteps: 1\nplatform: {topology: cluster, hosts: 2}\nmodel: {size: 1MB}\n"
             "algorithm: {name: ring_allreduce}\n");
  const auto with_scenario = snapshot(dir);
  REQUIRE(run_aggsim({"run", "s.yaml", "--out", "newrun", "-q"}, dir).exit_code == 0);
  auto after = snapshot(dir);
  for (auto it = after.begin(); it != after.end();)
    it = it->first.rfind("newrun", 0) == 0 ? after.erase(it) : std::next(it);
  CHECK(after == with_scenario);
  // And a genuine temporary of a dead process next to them goes.
  const pid_t killed = writer(dir, "run", false);
  ::waitpid(killed, nullptr, 0);
  REQUIRE(temporaries_of(dir, "run").size() == 1);
  REQUIRE(run_aggsim({"run", "s.yaml", "--out", "newrun", "-q"}, dir).exit_code == 0);
  CHECK(temporaries_of(dir, "run").empty());
  CHECK(fs::exists(dir / ".mydata.old-vm-999999/data.csv"));
}

TEST_CASE("a writer killed before its marker was whole leaves nothing behind", "[outputs][safety]") {
  // SIGKILL cannot be held back: it may come after the folder is made and before its marker is
  // written, or in the middle of that write. Such a folder holds nothing or the start of its
  // marker, and goes like any other temporary of a dead writer.
  const fs::path dir = fresh_dir("unfinished");
  const std::string me = this_host(), dead = std::to_string(dead_pid());
  const std::string token(32, 'c');
  const auto full = [&](const std::string& name) {
    return dir / ("." + name + ".tmp-" + me + "-" + dead + "-" + token);
  };
  const std::string marker = aggsim::temporary_marker_text(token);
  fs::create_directories(full("nothing"));
  write_file(full("empty") / aggsim::kTemporaryMarker, "");
  write_file(full("half") / aggsim::kTemporaryMarker, marker.substr(0, marker.size() / 2));
  // Not the start of the marker, or a marker's start with something else beside it: kept.
  write_file(full("other") / aggsim::kTemporaryMarker, "x");
  write_file(full("beside") / aggsim::kTemporaryMarker, marker.substr(0, 10));
  write_file(full("beside") / "content", "data\n");
  CHECK(aggsim::remove_stale_temporaries(dir) == 3);
  CHECK_FALSE(fs::exists(full("nothing")));
  CHECK_FALSE(fs::exists(full("empty")));
  CHECK_FALSE(fs::exists(full("half")));
  CHECK(fs::exists(full("other") / aggsim::kTemporaryMarker));
  CHECK(read_file(full("beside") / "content") == "data\n");
}
