#pragma once
// Runs the real `aggsim` binary (path compiled in as AGGSIM_BIN) and captures its exit code and output.
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace aggsim::test {

struct CliResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

inline std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline void write_file(const std::filesystem::path& p, const std::string& content) {
  std::filesystem::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << content;
}

inline std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// A fresh empty folder under the system temp dir, unique per call.
inline std::filesystem::path fresh_dir(const std::string& tag) {
  static int counter = 0;
  auto p = std::filesystem::temp_directory_path() /
           ("aggsim-test-" + tag + "-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
  std::filesystem::remove_all(p);
  std::filesystem::create_directories(p);
  return p;
}

// Runs `aggsim args...` in `cwd` (default: the source tree, so relative platform paths resolve).
// `memory_kib` > 0: under that address-space limit (ulimit -v), to check a cost in memory.
inline CliResult run_aggsim(const std::vector<std::string>& args,
                            const std::filesystem::path& cwd = AGGSIM_SOURCE_DIR, long memory_kib = 0) {
  const auto tmp = fresh_dir("cli");
  std::string cmd = "cd " + shell_quote(cwd.string()) + " && " +
                    (memory_kib > 0 ? "ulimit -v " + std::to_string(memory_kib) + " && " : "") +
                    shell_quote(AGGSIM_BIN);
  for (const auto& a : args) cmd += " " + shell_quote(a);
  cmd += " >" + shell_quote((tmp / "out").string()) + " 2>" + shell_quote((tmp / "err").string());
  const int status = std::system(cmd.c_str());
  CliResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = read_file(tmp / "out");
  r.err = read_file(tmp / "err");
  std::filesystem::remove_all(tmp);
  return r;
}

// Runs a shell line with bash in `dir` (for what run_aggsim cannot say: environment variables,
// redirections, a removed working directory); its exit code and stderr (`out` stays empty).
inline CliResult run_shell(const std::string& command, const std::filesystem::path& dir) {
  const auto tmp = fresh_dir("shell");
  const std::string full = "cd " + shell_quote(dir.string()) + " && " + command + " 2>" +
                           shell_quote((tmp / "err").string());
  const int status = std::system(("bash -c " + shell_quote(full)).c_str());
  CliResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.err = read_file(tmp / "err");
  std::filesystem::remove_all(tmp);
  return r;
}

}  // namespace aggsim::test
