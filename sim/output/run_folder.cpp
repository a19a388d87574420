#include "sim/output/run_folder.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <limits.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "sim/core/strings.hpp"
#include "sim/output/temporary.hpp"

namespace aggsim {

namespace fs = std::filesystem;

namespace {

const char* kind_name(FolderKind kind) {
  return kind == FolderKind::run ? "run" : "sweep";
}

// True when `ancestor` is `path` or one of its parent folders (both absolute and canonical).
bool contains(const fs::path& ancestor, const fs::path& path) {
  auto a = ancestor.begin(), p = path.begin();
  for (; a != ancestor.end(); ++a, ++p)
    if (p == path.end() || *a != *p) return false;
  return true;
}

void check_path_shape(const fs::path& dir) {
  const std::string text = dir.string();
  if (text.empty()) throw InputError("the output folder path is empty");
  if (text.find('\0') != std::string::npos)
    throw InputError(
        fmt::format("{}: the output folder path holds a NUL byte (\\x00), which no folder name can", text));
  if (text.size() >= PATH_MAX)
    throw InputError(fmt::format("{}...: the output folder path is longer than {} bytes", text.substr(0, 60),
                                 PATH_MAX - 1));
  for (const auto& part : dir)
    if (part.string().size() > NAME_MAX)
      throw InputError(fmt::format(
          "{}: a folder name in this path is longer than {} bytes; choose a shorter --out", text, NAME_MAX));
}

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

std::string folder_marker_text(FolderKind kind) {
  return kind == FolderKind::run
             ? fmt::format(
                   "{}, which may replace it whole. Remove this file to keep aggsim from ever "
                   "replacing it.\n",
                   kMarkerText)
             : fmt::format(
                   "{}, which writes and replaces files in it. Remove this file to keep aggsim from "
                   "ever writing here.\n",
                   kMarkerText);
}

MarkerState marker_state(const fs::path& marker) {
  const int fd = ::open(marker.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return MarkerState::none;
    if (errno == ELOOP) return MarkerState::foreign;  // a symbolic link
    throw fs::filesystem_error("cannot read the marker", marker,
                               std::error_code(errno, std::generic_category()));
  }
  struct stat st {};
  std::string head(std::char_traits<char>::length(kMarkerText), '\0');
  MarkerState state = MarkerState::foreign;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
    if (st.st_size == 0) {
      state = MarkerState::empty;
    } else {
      ssize_t got = 0, n = 0;
      while (got < static_cast<ssize_t>(head.size()) &&
             ((n = ::read(fd, head.data() + got, head.size() - static_cast<std::size_t>(got))) > 0 ||
              (n < 0 && errno == EINTR)))
        got += n > 0 ? n : 0;
      if (got == static_cast<ssize_t>(head.size()) && head == kMarkerText) state = MarkerState::aggsim;
    }
  }
  ::close(fd);
  return state;
}

InputError path_error(const fs::filesystem_error& error) {
  std::string where = error.path1().string();
  if (!error.path2().empty()) where += " -> " + error.path2().string();
  if (where.empty()) {  // an operation on no path of its own: the working directory's
    std::error_code ec;
    (void)fs::current_path(ec);
    const char* pwd = std::getenv("PWD");
    where = ec ? fmt::format("the working directory{}", pwd ? fmt::format(" (PWD={})", pwd) : "")
               : std::string("a file operation");
  }
  return InputError(fmt::format("{}: {}", where, error.code().message()));
}

void check_working_directory(const fs::path& path, const std::string& what) {
  if (!path.is_relative()) return;
  std::error_code ec;
  (void)fs::current_path(ec);
  if (!ec) return;
  const char* pwd = std::getenv("PWD");
  throw InputError(fmt::format(
      "{}{}: is relative to the working directory{}, which {} ({}): cd to an existing folder, or give an "
      "absolute path",
      what.empty() ? "" : what + ": ", path.string(), pwd ? fmt::format(" (PWD={})", pwd) : "",
      ec == std::errc::no_such_file_or_directory ? "no longer exists" : "cannot be read", ec.message()));
}

void check_output_folder(const fs::path& dir, FolderKind kind, const std::vector<fs::path>& protect) {
  check_path_shape(dir);
  check_working_directory(dir, "");
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
    std::error_code no_cwd;
    std::vector<fs::path> guarded = {fs::current_path(no_cwd)};  // none when removed: nothing to guard
    for (const auto& p : protect)
      if (!p.empty()) guarded.push_back(fs::weakly_canonical(fs::absolute(p)));
    for (const auto& p : guarded)
      if (!p.empty() && contains(canonical, p))
        throw InputError(fmt::format(
            "{}: contains {}{}; aggsim never replaces a folder holding the working directory or the "
            "scenario: choose another --out",
            dir.string(), p.string(), p == guarded.front() ? " (the working directory)" : ""));
    if (!fs::exists(link)) return;
    const fs::path marker = dir / folder_marker(kind);
    switch (marker_state(marker)) {
      case MarkerState::aggsim:
        return;
      case MarkerState::empty:
        throw InputError(fmt::format(
            "{}: its {} marker is empty, and aggsim's own markers say in their text that aggsim wrote the "
            "folder (older aggsim run folders may have an empty one): if this is an aggsim {} folder you "
            "want replaced, confirm it with: echo {} > {}, then run again; or choose another --out",
            dir.string(), folder_marker(kind), kind_name(kind), shell_quote(kMarkerText),
            shell_quote(marker.string())));
      case MarkerState::foreign:
        throw InputError(fmt::format(
            "{}: its {} is a symbolic link, not a regular file, or does not hold aggsim's marker text, so "
            "nothing shows that aggsim wrote this folder; aggsim replaces only folders it wrote: choose "
            "another --out",
            dir.string(), folder_marker(kind)));
      case MarkerState::none:
        break;
    }
    if (fs::is_empty(dir)) return;
    const FolderKind other = kind == FolderKind::run ? FolderKind::sweep : FolderKind::run;
    if (marker_state(dir / folder_marker(other)) != MarkerState::none)
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
    // The parent folders made here stay: removing them again would race with another aggsim
    // (a sweep's parallel points) that found them and is about to write into them.
    try {
      for (auto it = created.rbegin(); it != created.rend(); ++it) fs::create_directory(*it);
      const Temporary probe(parent, base_of(dir));  // made with its marker, removed at once
    } catch (const fs::filesystem_error& e) {
      throw InputError(fmt::format("{}: cannot write the output folder there ({}: {}); choose another --out",
                                   dir.string(), e.path1().string(), e.code().message()));
    }
  } catch (const fs::filesystem_error& e) {
    throw path_error(e);
  }
}

namespace {

// Bound on a resolved.yaml read back: the scenario and the comment lines a run adds about its
// platform are a few KB; anything far larger is no resolved.yaml aggsim wrote.
constexpr std::size_t kMaxResolvedBytes = 16u << 20;

// The text of a run folder's resolved.yaml, or "" when it is not a regular file (a symbolic link,
// a FIFO) of at most kMaxResolvedBytes.
std::string read_resolved_yaml(const fs::path& file) {
  const int fd = ::open(file.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return "";
  struct stat st {};
  std::string text;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
      static_cast<std::size_t>(st.st_size) <= kMaxResolvedBytes) {
    text.resize(static_cast<std::size_t>(st.st_size));
    std::size_t got = 0;
    while (got < text.size()) {
      const ssize_t n = ::read(fd, text.data() + got, text.size() - got);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      got += static_cast<std::size_t>(n);
    }
    text.resize(got);
  }
  ::close(fd);
  return text;
}

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
  if (marker_state(request.dir / folder_marker(FolderKind::run)) != MarkerState::aggsim)
    return;  // new or empty
  const std::string old = read_resolved_yaml(request.dir / "resolved.yaml");
  if (!old.empty() && without_comment_lines(old) == request.resolved_yaml) return;
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

void write_run_folder(const RunFolderRequest& request, const std::vector<OutputFile>& files) {
  const HeldSignals held;  // a signal now would leave a temporary or a half-swapped folder
  const fs::path target = request.dir.lexically_normal();
  const fs::path parent = parent_of(target);
  try {
    fs::create_directories(parent);
    const FolderLock lock(parent);  // another aggsim swapping the same folder waits here
    check_output_folder(request.dir, FolderKind::run, request.protect);
    check_same_run(request);
    remove_stale_temporaries(parent);
    // The new folder is built inside a temporary; the folder it replaces is moved into the same
    // temporary, so a process killed at any point leaves at most one temporary, which proves itself.
    const Temporary tmp(parent, base_of(target));
    const fs::path fresh = tmp.content(), previous = tmp.path() / "previous";
    fs::create_directory(fresh);
    std::vector<OutputFile> all = {{folder_marker(FolderKind::run), folder_marker_text(FolderKind::run)}};
    all.insert(all.end(), files.begin(), files.end());
    for (const auto& [name, content] : all) write_new_file(fresh / name, content);
    const bool replacing = fs::exists(fs::symlink_status(target));
    if (replacing) fs::rename(target, previous);
    try {
      fs::rename(fresh, target);
    } catch (...) {
      std::error_code ignored;
      if (replacing) fs::rename(previous, target, ignored);
      throw;
    }
  } catch (const fs::filesystem_error& e) {
    throw path_error(e);
  }
}

}  // namespace aggsim
