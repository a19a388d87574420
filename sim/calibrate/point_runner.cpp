#include "sim/calibrate/point_runner.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "sim/core/error.hpp"

extern char** environ;

namespace aggsim {

namespace fs = std::filesystem;

namespace {

std::string read_text(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A private scratch folder, removed when the batch is done.
struct ScratchDir {
  fs::path path;
  ScratchDir() {
    std::string templ = (fs::temp_directory_path() / "aggsim-points-XXXXXX").string();
    if (!::mkdtemp(templ.data())) throw std::runtime_error(fmt::format("mkdtemp: {}", std::strerror(errno)));
    path = templ;
  }
  ~ScratchDir() {
    std::error_code ignored;
    fs::remove_all(path, ignored);
  }
};

pid_t spawn(const PointRunOptions& options, const std::vector<std::string>& sets, const fs::path& out,
            const fs::path& err) {
  std::vector<std::string> args = {options.exe, "run", options.scenario, "-q", "--out", out.string()};
  for (const auto& s : sets) args.insert(args.end(), {"--set", s});
  args.insert(args.end(), options.simgrid_args.begin(), options.simgrid_args.end());
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, options.exe.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) throw std::runtime_error(fmt::format("cannot start {}: {}", options.exe, std::strerror(rc)));
  return pid;
}

// The algorithm/protocol pair most of the run's calls used (nccl_calls_<algorithm>_<protocol>).
std::string main_choice(const nlohmann::json& summary) {
  const std::string prefix = "nccl_calls_";
  std::string best;
  double most = 0;
  for (const auto& [key, value] : summary.items()) {
    if (key.rfind(prefix, 0) != 0 || !value.is_number() || value.get<double>() <= most) continue;
    most = value.get<double>();
    const std::string pair = key.substr(prefix.size());
    const auto cut = pair.rfind('_');
    best = pair.substr(0, cut) + "/" + pair.substr(cut + 1);
  }
  return best;
}

}  // namespace

std::vector<double> run_points(const PointRunOptions& options,
                               const std::vector<std::vector<std::string>>& sets,
                               std::vector<std::string>* choices) {
  if (choices) choices->assign(sets.size(), "");
  const ScratchDir scratch;
  std::vector<double> times(sets.size(), 0.0);
  std::map<pid_t, std::size_t> running;
  std::size_t next = 0;
  std::string failure;
  bool input_failure = false;
  while ((next < sets.size() && failure.empty()) || !running.empty()) {
    while (failure.empty() && next < sets.size() &&
           static_cast<int>(running.size()) < std::max(1, options.jobs)) {
      const fs::path dir = scratch.path / fmt::format("p{}", next);
      running[spawn(options, sets[next], dir, scratch.path / fmt::format("p{}.err", next))] = next;
      ++next;
    }
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, 0);
    if (pid < 0) {
      if (errno == EINTR) continue;
      throw std::runtime_error(fmt::format("waitpid: {}", std::strerror(errno)));
    }
    const auto it = running.find(pid);
    if (it == running.end()) continue;
    const std::size_t i = it->second;
    running.erase(it);
    const fs::path summary = scratch.path / fmt::format("p{}", i) / "summary.json";
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0 && fs::exists(summary)) {
      const auto json = nlohmann::json::parse(read_text(summary));
      times[i] = json.at("sim_time_s").get<double>();
      if (choices) (*choices)[i] = main_choice(json);
      continue;
    }
    if (failure.empty()) {  // keep the first failure; let the others finish
      std::string err = read_text(scratch.path / fmt::format("p{}.err", i));
      if (err.rfind("aggsim: error: ", 0) == 0) err = err.substr(15);
      while (!err.empty() && err.back() == '\n') err.pop_back();
      input_failure = WIFEXITED(status) && WEXITSTATUS(status) == 2;
      std::string what;
      for (const auto& s : sets[i]) what += " --set " + s;
      failure = fmt::format("{} (simulating{})", err.empty() ? "the simulation failed" : err, what);
    }
  }
  if (!failure.empty()) {
    if (input_failure) throw InputError(failure);
    throw std::runtime_error(failure);
  }
  return times;
}

}  // namespace aggsim
