#include "sim/core/input_file.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "sim/core/error.hpp"
#include "sim/core/strings.hpp"

namespace aggsim {

namespace {

[[noreturn]] void fail_errno(const std::string& path, const std::string& what, int err) {
  throw InputError(fmt::format("{}: cannot read the {} file: {}", path, what, std::strerror(err)));
}

const char* kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a folder";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

}  // namespace

void check_path_bytes(const std::string& path, const std::string& what) {
  if (path.find('\0') != std::string::npos)
    throw InputError(
        fmt::format("{}: the {} file's path holds a NUL byte (\\x00), which no file name can; "
                    "write the path without it",
                    path, what));
}

void check_line_lengths(const std::string& text, const std::string& label) {
  std::size_t line = 1, start = 0;
  while (start <= text.size()) {
    const std::size_t end = std::min(text.find('\n', start), text.size());
    if (end - start > kMaxInputLineBytes)
      throw InputError(
          fmt::format("{}:{}: the line is longer than {} bytes (1 MiB), the most aggsim reads in "
                      "one line of an input file",
                      label, line, kMaxInputLineBytes));
    if (end == text.size()) break;
    start = end + 1;
    ++line;
  }
}

bool input_path_exists(const std::string& path, const std::string& what) {
  check_path_bytes(path, what);
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (ec && ec != std::errc::no_such_file_or_directory && ec != std::errc::not_a_directory)
    throw InputError(fmt::format("{}: cannot read the {} file: {}", path, what, ec.message()));
  return std::filesystem::exists(status);
}

std::string read_input_file(const std::string& path, const std::string& what, bool utf8) {
  check_path_bytes(path, what);
  // O_NONBLOCK: opening a FIFO with no writer must not block; fstat then refuses it.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    if (errno == ENOENT) throw InputError(fmt::format("{}: {} file not found", path, what));
    fail_errno(path, what, errno);
  }
  struct FdCloser {
    int fd;
    ~FdCloser() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) fail_errno(path, what, errno);
  if (!S_ISREG(st.st_mode))
    throw InputError(
        fmt::format("{}: the {} must be a regular file, and this is {}", path, what, kind_of(st.st_mode)));
  if (static_cast<std::uintmax_t>(st.st_size) > kMaxInputBytes)
    throw InputError(fmt::format("{}: the {} file has {} bytes; input files are limited to {} bytes (64 MiB)",
                                 path, what, st.st_size, kMaxInputBytes));
  std::string text;
  char buffer[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail_errno(path, what, errno);
    }
    if (n == 0) break;
    text.append(buffer, static_cast<std::size_t>(n));
    // A file growing while we read it is held to the same bound.
    if (text.size() > kMaxInputBytes)
      throw InputError(fmt::format("{}: the {} file grew beyond {} bytes (64 MiB) while being read", path,
                                   what, kMaxInputBytes));
  }
  check_line_lengths(text, path);
  if (utf8) check_utf8(text, path);
  return text;
}

void check_utf8(const std::string& text, const std::string& label) {
  int line = 1, col = 1;
  for (std::size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    std::uint32_t cp = 0;
    const std::size_t len = utf8_sequence(text, i, cp);
    // A NUL byte ends C strings early: never text.
    const bool ok = len != 0 && c != 0;
    if (!ok)
      throw InputError(fmt::format("{}:{}:{}: {}", label, line, col,
                                   c == 0 ? "a NUL byte, which text never holds"
                                          : "the text is not valid UTF-8 here; save the "
                                            "file as UTF-8"));
    if (c == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
    i += len;
  }
}

}  // namespace aggsim
