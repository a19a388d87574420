#include "sim/output/temporary.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <limits.h>
#include <pthread.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <vector>

#include "sim/core/error.hpp"

namespace aggsim {

namespace fs = std::filesystem;

namespace {

constexpr std::size_t kTokenDigits = 32;
constexpr std::size_t kMaxNameInTemporary = 64;  // the temporary's name must stay below NAME_MAX

std::string host_name() {
  char host[HOST_NAME_MAX + 1] = {};
  if (::gethostname(host, sizeof host - 1) != 0) return "host";
  std::string name(host);
  for (char& c : name)  // a temporary's name must stay one plain path component
    if (c == '/' || c == '-') c = '_';
  return name.empty() ? "host" : name;
}

std::string random_token() {
  unsigned char bytes[kTokenDigits / 2];
  std::size_t got = 0;
  while (got < sizeof bytes) {
    const ssize_t n = ::getrandom(bytes + got, sizeof bytes - got, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw fs::filesystem_error("cannot draw a random token",
                                 std::error_code(errno, std::generic_category()));
    }
    got += static_cast<std::size_t>(n);
  }
  std::string token;
  for (unsigned char b : bytes) token += fmt::format("{:02x}", b);
  return token;
}

[[noreturn]] void fail_errno(const char* what, const fs::path& path) {
  throw fs::filesystem_error(what, path, std::error_code(errno ? errno : EIO, std::generic_category()));
}

// A file's text if it is a regular file (not a symbolic link) of at most `limit` bytes.
bool read_small_regular_file(const fs::path& path, std::size_t limit, std::string& text) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return false;
  struct stat st {};
  const bool regular =
      ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && static_cast<std::size_t>(st.st_size) <= limit;
  text.clear();
  if (regular) {
    char buffer[4096];
    for (;;) {
      const ssize_t n = ::read(fd, buffer, sizeof buffer);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      text.append(buffer, static_cast<std::size_t>(n));
      if (text.size() > limit) break;
    }
  }
  ::close(fd);
  return regular && text.size() <= limit;
}

// Whether process `pid` (of this host) may still write: it exists, and is not a zombie. A killed
// writer stays a zombie until its parent reaps it, and a killed sweep runner's children may wait long
// for that (their new parent need not reap at once), yet they write nothing any more.
bool still_running(long pid) {
  if (pid == ::getpid()) return true;
  if (pid <= 0 || pid > INT_MAX) return false;
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

void write_new_file(const fs::path& path, const std::string& content) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) fail_errno("cannot create", path);
  std::size_t done = 0;
  while (done < content.size()) {
    const ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd);
      errno = err;
      fail_errno("cannot write", path);
    }
    done += static_cast<std::size_t>(n);
  }
  if (::close(fd) != 0) fail_errno("cannot write", path);
}

HeldSignals::HeldSignals() {
  sigset_t set;
  sigemptyset(&set);
  for (int s : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) sigaddset(&set, s);
  pthread_sigmask(SIG_BLOCK, &set, &old_);
}

HeldSignals::~HeldSignals() {
  pthread_sigmask(SIG_SETMASK, &old_, nullptr);
}

std::string temporary_marker_text(const std::string& token) {
  return fmt::format(
      "aggsim temporary {}\nThis folder was made by aggsim while writing beside it; aggsim removes it once "
      "the "
      "process that made it has ended.\n",
      token);
}

Temporary::Temporary(const fs::path& folder, const std::string& name) {
  const HeldSignals held;  // a folder without its marker would prove nothing: make both or neither
  const std::string token = random_token();
  path_ = folder / fmt::format(".{}.tmp-{}-{}-{}", name.substr(0, kMaxNameInTemporary), host_name(),
                               ::getpid(), token);
  fs::create_directory(path_);
  try {
    write_new_file(path_ / kTemporaryMarker, temporary_marker_text(token));
  } catch (...) {
    std::error_code ignored;
    fs::remove_all(path_, ignored);  // a full disk: the marker could not be written, nothing stays
    throw;
  }
}

Temporary::~Temporary() {
  std::error_code ignored;
  fs::remove_all(path_, ignored);
}

bool is_stale_temporary(const fs::path& entry) {
  const std::string name = entry.filename().string();
  if (name.empty() || name[0] != '.') return false;
  const auto at = name.rfind(".tmp-");
  if (at == std::string::npos) return false;
  const std::string owner = name.substr(at + 5);  // HOST-PID-TOKEN
  const auto token_dash = owner.rfind('-');
  if (token_dash == std::string::npos) return false;
  const std::string token = owner.substr(token_dash + 1);
  if (token.size() != kTokenDigits || token.find_first_not_of("0123456789abcdef") != std::string::npos)
    return false;
  const std::string host_pid = owner.substr(0, token_dash);
  const auto pid_dash = host_pid.rfind('-');
  if (pid_dash == std::string::npos || host_pid.substr(0, pid_dash) != host_name()) return false;
  const std::string pid_text = host_pid.substr(pid_dash + 1);
  if (pid_text.empty() || pid_text.size() > 10 ||
      pid_text.find_first_not_of("0123456789") != std::string::npos)
    return false;
  if (still_running(std::stol(pid_text))) return false;
  std::error_code ec;
  if (!fs::is_directory(fs::symlink_status(entry, ec))) return false;
  std::string marker;
  const std::string expected = temporary_marker_text(token);
  const bool readable = read_small_regular_file(entry / kTemporaryMarker, expected.size(), marker);
  if (readable && marker == expected) return true;
  // Killed between making the folder and finishing its marker (SIGKILL cannot be held back): the
  // folder holds nothing, or only the start of the marker's text (the content comes after it).
  std::size_t entries = 0;
  for (auto it = fs::directory_iterator(entry, ec); !ec && it != fs::directory_iterator(); it.increment(ec))
    ++entries;
  if (ec) return false;
  return entries == 0 || (entries == 1 && readable && expected.compare(0, marker.size(), marker) == 0);
}

int remove_stale_temporaries(const fs::path& folder) {
  std::error_code ec;
  if (!fs::is_directory(fs::symlink_status(folder, ec))) return 0;
  std::vector<fs::path> stale;
  for (auto it = fs::directory_iterator(folder, ec); !ec && it != fs::directory_iterator(); it.increment(ec))
    if (is_stale_temporary(it->path())) stale.push_back(it->path());
  int removed = 0;
  for (const auto& p : stale) removed += fs::remove_all(p, ec) > 0;
  return removed;
}

void write_file_atomically(const fs::path& path, const std::string& content) {
  const HeldSignals held;  // a signal now would leave the temporary behind
  const fs::path parent = path.parent_path().empty() ? fs::path(".") : path.parent_path();
  fs::create_directories(parent);
  const Temporary tmp(parent, path.filename().string());
  try {
    write_new_file(tmp.content(), content);
  } catch (const fs::filesystem_error& e) {
    throw fs::filesystem_error("cannot write", path, e.code());  // the file meant, not the temporary
  }
  std::error_code ec;
  const fs::file_status status = fs::symlink_status(path, ec);
  if (fs::exists(status) && !fs::is_regular_file(status))
    throw InputError(
        fmt::format("{}: exists and is not a regular file (a folder, a device, a FIFO or a symbolic "
                    "link); aggsim replaces only regular files",
                    path.string()));
  fs::rename(tmp.content(), path);
}

std::filesystem::path system_temporary_folder() {
  const char* tmpdir = std::getenv("TMPDIR");
  if (tmpdir == nullptr) return "/tmp";
  const std::filesystem::path folder = tmpdir;
  std::error_code ec;
  const auto status = std::filesystem::status(folder, ec);
  if (folder.empty() || !std::filesystem::is_directory(status))
    throw InputError(fmt::format(
        "TMPDIR='{}': {}: it names the folder for temporary files (the scratch runs of perf, calibrate "
        "and compare); name an existing folder, or unset it for /tmp",
        tmpdir,
        folder.empty()                          ? "is empty"
        : !std::filesystem::exists(status)      ? "no such folder"
        : ec                                    ? ec.message()
                                                : "is not a folder"));
  return folder;
}

}  // namespace aggsim
