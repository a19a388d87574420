// What calibrate and compare write and read from the command line: the output file is checked
// before any simulation and written whole (never over a device, a FIFO, a folder, a link or an
// input), measurement paths get the checks of every input file, and an interrupted or killed
// batch leaves neither its points folder, nor a temporary, nor a running child behind.
#include <signal.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <functional>
#include <thread>

#include "calibration_fixture.hpp"
#include "support/cli.hpp"
#include "support/process_group.hpp"

using namespace aggsim::test;
namespace fs = std::filesystem;

namespace {

// `points` all-reduce rows on 8 ranks of one node, of a plausible machine (10 us + S / 10 GB/s).
std::string measurements(int points) {
  std::string csv = "collective,ranks,nodes,bytes,time\n";
  for (int i = 0; i < points; ++i) {
    const double bytes = 1024.0 * (i + 1);
    csv += "all_reduce,8,1," + std::to_string(static_cast<long>(bytes)) + "," +
           std::to_string(1e-5 + bytes / 1e10) + "\n";
  }
  return csv;
}

// `aggsim args...` in `dir` as the leader of its own process group, with TMPDIR=`tmp`.
pid_t start(const fs::path& dir, const fs::path& tmp, const std::vector<std::string>& args) {
  return start_group("cd " + shell_quote(dir.string()) + " && export TMPDIR=" + shell_quote(tmp.string()) +
                     " && " + aggsim_command(args, dir / "aggsim.log"));
}

}  // namespace

TEST_CASE("compare --csv and calibrate --out refuse what is not a regular file, before any work",
          "[calibrate][cli][outputs]") {
  const auto dir = fresh_dir("measured-outputs");
  write_file(dir / "s.yaml", kOneNodeScenario);
  write_file(dir / "m.csv", measurements(2));
  fs::create_directories(dir / "folder");
  REQUIRE(::mkfifo((dir / "fifo").c_str(), 0600) == 0);
  write_file(dir / "target.csv", "mine\n");
  fs::create_symlink("target.csv", dir / "link.csv");
  write_file(dir / "plain.txt", "x\n");
  struct Case {
    std::string path, what;
  };
  std::vector<Case> cases = {{"folder", "is a folder"},
                             {"fifo", "is a FIFO (named pipe)"},
                             {"link.csv", "is a symbolic link"},
                             {"s.yaml", "is an input of this command"},
                             {"m.csv", "is an input of this command"},
                             {"plain.txt/out.csv", "Not a directory"}};
  // A device: made here (as root only) rather than /dev/full, which a bug would replace.
  if (::geteuid() == 0 && ::mknod((dir / "device").c_str(), S_IFCHR | 0600, makedev(1, 3)) == 0)
    cases.push_back({"device", "is a character device"});
  for (const auto& c : cases) {
    INFO(c.path);
    for (const std::string option : {"--csv", "--out"}) {
      const std::string verb = option == "--csv" ? "compare" : "calibrate";
      const auto r = run_aggsim({verb, "s.yaml", "m.csv", option, c.path}, dir);
      INFO(verb << ": " << r.err);
      CHECK(r.exit_code == 2);
      CHECK_THAT(r.err, Catch::StartsWith("aggsim: error: " + option + ": " + c.path + ": "));
      CHECK_THAT(r.err, Catch::Contains(c.what));
      CHECK(r.out.empty());  // refused before any point was simulated (compare prints its table after)
    }
  }
  CHECK(read_file(dir / "target.csv") == "mine\n");
  CHECK(fs::is_symlink(dir / "link.csv"));
  CHECK(fs::is_directory(dir / "folder"));
  CHECK(fs::is_fifo(dir / "fifo"));
  CHECK(temporaries(dir).empty());
  // A regular file is replaced whole, and nothing is left beside it.
  const auto r = run_aggsim({"compare", "s.yaml", "m.csv", "--csv", "target.csv"}, dir);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(read_file(dir / "target.csv"), Catch::StartsWith("collective,ranks,nodes,bytes,measured_s"));
  CHECK(temporaries(dir).empty());
}

TEST_CASE("measurement paths get the checks of every input file", "[calibrate][cli][malformed]") {
  const auto dir = fresh_dir("measured-inputs");
  write_file(dir / "s.yaml", kOneNodeScenario);
  REQUIRE(::mkfifo((dir / "fifo.log").c_str(), 0600) == 0);
  // /dev/zero and /dev/urandom grew to gigabytes, a FIFO blocked forever: refused by name.
  for (const auto& [path, what] : std::vector<std::pair<std::string, std::string>>{
           {"/dev/zero", "character device"}, {"/dev/urandom", "character device"}, {"fifo.log", "FIFO"}}) {
    INFO(path);
    const auto r = run_aggsim({"compare", "s.yaml", path}, dir);
    INFO(r.err);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Catch::Contains(path + ": the measurement must be a regular file"));
    CHECK_THAT(r.err, Catch::Contains(what));
  }
}

TEST_CASE("SIGINT or SIGTERM stops compare and calibrate with no points folder, temporary or child left",
          "[calibrate][cli][signals]") {
  for (const int sig : {SIGINT, SIGTERM}) {
    for (const std::string verb : {"compare", "calibrate"}) {
      INFO(verb << ", signal " << sig);
      const auto dir = fresh_dir("measured-signal");
      const fs::path tmp = dir / "tmp";
      fs::create_directories(tmp);
      write_file(dir / "s.yaml", kOneNodeScenario);
      write_file(dir / "m.csv", measurements(400));
      const std::vector<std::string> args = {
          verb, "s.yaml", "m.csv", "-j", "2", verb == "compare" ? "--csv" : "--out", "out.file"};
      const pid_t pid = start(dir, tmp, args);
      // Interrupted while its points run: the points folder exists and holds a child's files.
      REQUIRE(wait_until(60, [&] { return !fs::is_empty(tmp) && !temporaries(tmp).empty(); }));
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      ::kill(pid, sig);
      int status = 0;
      ::waitpid(pid, &status, 0);
      INFO(read_file(dir / "aggsim.log"));
      CHECK(WIFSIGNALED(status));
      CHECK(WTERMSIG(status) == sig);
      CHECK(fs::is_empty(tmp));                                  // the points folder is gone
      CHECK(wait_until(10, [&] { return !group_alive(pid); }));  // every child was stopped
      CHECK(!fs::exists(dir / "out.file"));
      CHECK(temporaries(dir).empty());
    }
  }
}

TEST_CASE("a SIGKILLed compare's children end with it, and the next batch removes its points folder",
          "[calibrate][cli][signals]") {
  const auto dir = fresh_dir("measured-kill");
  const fs::path tmp = dir / "tmp";
  fs::create_directories(tmp);
  write_file(dir / "s.yaml", kOneNodeScenario);
  write_file(dir / "m.csv", measurements(400));
  write_file(dir / "one.csv", measurements(1));
  const pid_t pid = start(dir, tmp, {"compare", "s.yaml", "m.csv", "-j", "2"});
  REQUIRE(wait_until(60, [&] { return !temporaries(tmp).empty(); }));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  CHECK(wait_until(10, [&] { return !group_alive(pid); }));  // children stopped by their parent's death
  CHECK(!temporaries(tmp).empty());                          // a SIGKILL cannot be caught
  const pid_t next = start(dir, tmp, {"compare", "s.yaml", "one.csv"});
  int status = 0;
  ::waitpid(next, &status, 0);
  CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 0));
  CHECK(fs::is_empty(tmp));
}

TEST_CASE("text of a log shown in a warning or the table is escaped", "[calibrate][cli][malformed]") {
  const auto dir = fresh_dir("measured-escapes");
  write_file(dir / "s.yaml", kOneNodeScenario);
  // A row of the table whose collective is an escape sequence: skipped, and named, escaped.
  write_file(dir / "m.csv", measurements(2) + "\x1b[2Jall\x1b]0;x\x07,8,1,1024,0.001\n");
  for (const std::string verb : {"compare", "calibrate"}) {
    std::vector<std::string> args = {verb, "s.yaml", "m.csv"};
    if (verb == "calibrate") args.insert(args.end(), {"--out", "cal.yaml"});
    const auto r = run_aggsim(args, dir);
    INFO(verb << ": " << r.out << r.err);
    CHECK(r.exit_code == 0);
    CHECK_THAT(r.err, Catch::Contains("m.csv:4: skipped: unknown collective '\\x1B[2Jall\\x1B]0;x\\x07'"));
    CHECK((r.out + r.err).find_first_of("\x1b\x07") == std::string::npos);
  }
}
