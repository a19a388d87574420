#include "sim/output/run_folder.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <limits.h>
#include <pthread.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <fstream>
#include <sstream>

namespace aggsim {

namespace fs = std::filesystem;

namespace {

const char* kind_name(FolderKind kind) {
  return kind == FolderKind::run ? "run" : "sweep";
}

std::string host_name() {
  char host[HOST_NAME_MAX + 1] = {};
  if (::gethostname(host, sizeof host - 1) != 0) return "host";
  std::string name(host);
  for (char& c : name)  // a temporary's name must stay one plain path component
    if (c == '/' || c == '-') c = '_';
  return name.empty() ? "host" : name;
}

// True when `ancestor` is `path` or one of its parent folders (both absolute and canonical).
bool contains(const fs::path& ancestor, const fs::path& path) {
  auto a = ancestor.begin(), p = path.begin();
  for (; a != ancestor.end(); ++a, ++p)
    if (p == path.end() || *a != *p) return false;
  return true;
}

std::string read_all(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

void check_path_shape(const fs::path& dir) {
  const std::string text = dir.string();
  if (text.empty()) throw InputError("the output folder path is empty");
  if (text.size() >= PATH_MAX)
    throw InputError(fmt::format("{}...: the output folder path is longer than {} bytes", text.substr(0, 60),
                                 PATH_MAX - 1));
  for (const auto& part : dir)
    if (part.string().size() > NAME_MAX)
      throw InputError(fmt::format(
          "{}: a folder name in this path is longer than {} bytes; choose a shorter --out", text, NAME_MAX));
}

// Holds back the signals that would otherwise stop the process halfway through a folder swap.
class HeldSignals {
 public:
  HeldSignals() {
    sigset_t set;
    sigemptyset(&set);
    for (int s : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) sigaddset(&set, s);
    pthread_sigmask(SIG_BLOCK, &set, &old_);
  }
  ~HeldSignals() { pthread_sigmask(SIG_SETMASK, &old_, nullptr); }
  HeldSignals(const HeldSignals&) = delete;
  HeldSignals& operator=(const HeldSignals&) = delete;

 private:
  sigset_t old_;
};

// An exclusive lock on a folder (flock on the folder itself: nothing is left behind).
class FolderLock {
 public:
  explicit FolderLock(const fs::path& folder)
      : fd_(::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)) {
    if (fd_ < 0)
      throw fs::filesystem_error("cannot open the folder", folder,
                                 std::error_code(errno, std::generic_category()));
    while (::flock(fd_, LOCK_EX) != 0 && errno == EINTR) {
    }
  }
  ~FolderLock() { ::close(fd_); }
  FolderLock(const FolderLock&) = delete;
  FolderLock& operator=(const FolderLock&) = delete;

 private:
  int fd_;
};

fs::path parent_of(const fs::path& dir) {
  const fs::path normal = dir.lexically_normal();
  const fs::path plain = normal.filename().empty() ? normal.parent_path() : normal;  // "out/x/" -> "out/x"
  return plain.has_parent_path() ? plain.parent_path() : fs::path(".");
}

std::string base_of(const fs::path& dir) {
  const fs::path normal = dir.lexically_normal();
  return (normal.filename().empty() ? normal.parent_path() : normal).filename().string();
}

}  // namespace

const char* folder_marker(FolderKind kind) {
  return kind == FolderKind::run ? ".aggsim-run" : ".aggsim-sweep";
}

InputError path_error(const fs::filesystem_error& error) {
  std::string where = error.path1().string();
  if (!error.path2().empty()) where += " -> " + error.path2().string();
  if (where.empty()) where = "output";
  return InputError(fmt::format("{}: {}", where, error.code().message()));
}

void write_whole_file(const fs::path& path, const std::string& content) {
  std::ofstream out(path, std::ios::binary);
  out << content;
  out.close();
  if (!out)
    throw fs::filesystem_error("cannot write", path,
                               std::error_code(errno ? errno : EIO, std::generic_category()));
}

std::string temporary_name(const std::string& name, const char* kind) {
  return fmt::format(".{}.{}-{}-{}", name, kind, host_name(), ::getpid());
}

void check_output_folder(const fs::path& dir, FolderKind kind, const std::vector<fs::path>& protect) {
  check_path_shape(dir);
  try {
    const std::string base = base_of(dir);
    if (base.empty() || base == "." || base == "..")
      throw InputError(fmt::format(
          "{}: names the working directory, one of its parents or '/'; aggsim writes its {} folders only "
          "into folders of their own: give a new folder name, e.g. --out out/my-{}",
          dir.string(), kind_name(kind), kind_name(kind)));
    const fs::file_status link = fs::symlink_status(dir);
    if (fs::is_symlink(link))
      throw InputError(
          fmt::format("{}: is a symbolic link; aggsim writes {} folders only as real folders: give the "
                      "folder it points to, "
                      "or another --out",
                      dir.string(), kind_name(kind)));
    if (fs::exists(link) && !fs::is_directory(link))
      throw InputError(
          fmt::format("{}: exists and is not a folder; aggsim never replaces a file: choose another --out or "
                      "move the file away",
                      dir.string()));
    const fs::path canonical = fs::weakly_canonical(fs::absolute(dir));
    std::vector<fs::path> guarded = {fs::current_path()};
    for (const auto& p : protect)
      if (!p.empty()) guarded.push_back(fs::weakly_canonical(fs::absolute(p)));
    for (const auto& p : guarded)
      if (contains(canonical, p))
        throw InputError(fmt::format(
            "{}: contains {}{}; aggsim never replaces a folder holding the working directory or the "
            "scenario: choose another --out",
            dir.string(), p.string(), p == guarded.front() ? " (the working directory)" : ""));
    if (!fs::exists(link)) return;
    if (fs::is_regular_file(dir / folder_marker(kind)) || fs::is_empty(dir)) return;
    const FolderKind other = kind == FolderKind::run ? FolderKind::sweep : FolderKind::run;
    if (fs::exists(dir / folder_marker(other)))
      throw InputError(fmt::format("{}: is an aggsim {} folder, not a {} folder: choose another --out",
                                   dir.string(), kind_name(other), kind_name(kind)));
    throw InputError(fmt::format(
        "{}: exists and is not an aggsim {} folder (it has no {} marker); aggsim replaces only folders it "
        "wrote: choose another --out, or empty or remove that folder yourself",
        dir.string(), kind_name(kind), folder_marker(kind)));
  } catch (const fs::filesystem_error& e) {
    throw path_error(e);
  }
}

void check_writable(const fs::path& dir) {
  const HeldSignals held;  // the probe must not outlive an interrupted process
  try {
    const fs::path parent = parent_of(dir);
    std::vector<fs::path> created;
    for (fs::path p = parent; !p.empty() && !fs::exists(fs::symlink_status(p)); p = p.parent_path()) {
      created.push_back(p);
      if (p == p.parent_path()) break;
    }
    std::error_code ignored;
    // The parent folders made here stay: removing them again would race with another aggsim
    // (a sweep's parallel points) that found them and is about to write into them.
    try {
      for (auto it = created.rbegin(); it != created.rend(); ++it) fs::create_directory(*it);
      const fs::path probe = parent / temporary_name(base_of(dir), "tmp");
      fs::remove_all(probe);
      fs::create_directory(probe);
      try {
        write_whole_file(probe / ".aggsim-probe", "probe\n");
      } catch (...) {
        fs::remove_all(probe, ignored);
        throw;
      }
      fs::remove_all(probe);
    } catch (const fs::filesystem_error& e) {
      throw InputError(fmt::format("{}: cannot write the output folder there ({}: {}); choose another --out",
                                   dir.string(), e.path1().string(), e.code().message()));
    }
  } catch (const fs::filesystem_error& e) {
    throw path_error(e);
  }
}

namespace {

// resolved.yaml without its comment lines (what the run wrote about the platform beside the
// scenario, such as its effective link costs): the scenario alone.
std::string without_comment_lines(const std::string& text) {
  std::string out;
  std::size_t begin = 0;
  while (begin < text.size()) {
    std::size_t end = text.find('\n', begin);
    end = end == std::string::npos ? text.size() : end + 1;
    if (text[begin] != '#') out.append(text, begin, end - begin);
    begin = end;
  }
  return out;
}

void check_same_run(const RunFolderRequest& request) {
  if (request.replace_different) return;
  const fs::path old = request.dir / "resolved.yaml";
  if (!fs::exists(request.dir / folder_marker(FolderKind::run))) return;  // new or empty folder
  if (fs::is_regular_file(old) && without_comment_lines(read_all(old)) == request.resolved_yaml) return;
  throw InputError(fmt::format(
      "{}: already holds the run of a different scenario (its resolved.yaml differs from this run's); "
      "rerun with --force to replace it, or choose another folder with --out DIR",
      request.dir.string()));
}

}  // namespace

void prepare_run_folder(const RunFolderRequest& request) {
  check_output_folder(request.dir, FolderKind::run, request.protect);
  try {
    check_same_run(request);
  } catch (const fs::filesystem_error& e) {
    throw path_error(e);
  }
  check_writable(request.dir);
}

namespace {

// Whether process `pid` (of this host) may still write: it exists, and is not a zombie. A killed
// writer stays a zombie until its parent reaps it, and a killed sweep runner's children may wait long
// for that (their new parent need not reap at once), yet they write nothing any more.
bool still_running(long pid) {
  if (pid == ::getpid()) return true;
  if (::kill(static_cast<pid_t>(pid), 0) != 0 && errno != EPERM) return false;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return true;  // no /proc: trust kill()
  const auto name_end = line.rfind(')');       // "pid (name) state ...", the name may hold spaces
  if (name_end == std::string::npos || name_end + 2 >= line.size()) return true;
  const char state = line[name_end + 2];
  return state != 'Z' && state != 'X';
}

}  // namespace

void remove_stale_temporaries(const fs::path& folder) {
  std::error_code ec;
  if (!fs::is_directory(folder, ec)) return;
  const std::string host = host_name();
  std::vector<fs::path> stale;
  for (const auto& entry : fs::directory_iterator(folder, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name[0] != '.') continue;
    for (const char* kind : {".tmp-", ".old-"}) {
      const auto at = name.rfind(kind);
      if (at == std::string::npos) continue;
      const std::string owner = name.substr(at + std::strlen(kind));  // HOST-PID
      const auto dash = owner.rfind('-');
      if (dash == std::string::npos || owner.substr(0, dash) != host) continue;
      const std::string pid_text = owner.substr(dash + 1);
      if (pid_text.empty() || pid_text.find_first_not_of("0123456789") != std::string::npos) continue;
      const long pid = std::strtol(pid_text.c_str(), nullptr, 10);
      if (!still_running(pid)) stale.push_back(entry.path());
    }
  }
  for (const auto& p : stale) fs::remove_all(p, ec);
}

void write_run_folder(const RunFolderRequest& request, const std::vector<OutputFile>& files) {
  const HeldSignals held;  // a signal now would leave a temporary or a half-swapped folder
  const fs::path target = request.dir.lexically_normal();
  const fs::path parent = parent_of(target);
  const std::string base = base_of(target);
  const fs::path tmp = parent / temporary_name(base, "tmp");
  const fs::path old = parent / temporary_name(base, "old");
  try {
    fs::create_directories(parent);
    const FolderLock lock(parent);  // another aggsim swapping the same folder waits here
    check_output_folder(request.dir, FolderKind::run, request.protect);
    check_same_run(request);
    remove_stale_temporaries(parent);
    fs::remove_all(tmp);
    fs::create_directory(tmp);
    try {
      write_whole_file(
          tmp / folder_marker(FolderKind::run),
          "This folder was written by aggsim, which may replace it whole. Remove this file to keep "
          "aggsim from ever replacing it.\n");
      for (const auto& [name, content] : files) write_whole_file(tmp / name, content);
      const bool replacing = fs::exists(fs::symlink_status(target));
      if (replacing) fs::rename(target, old);
      try {
        fs::rename(tmp, target);
      } catch (...) {
        if (replacing) fs::rename(old, target);
        throw;
      }
      if (replacing) fs::remove_all(old);
    } catch (...) {
      std::error_code ignored;
      fs::remove_all(tmp, ignored);
      if (fs::exists(old, ignored)) {
        if (!fs::exists(target, ignored)) fs::rename(old, target, ignored);
        fs::remove_all(old, ignored);
      }
      throw;
    }
  } catch (const fs::filesystem_error& e) {
    throw path_error(e);
  }
}

}  // namespace aggsim
