#include "sim/output/output_file.hpp"

#include <fmt/format.h>

#include "sim/core/error.hpp"
#include "sim/output/run_folder.hpp"
#include "sim/output/temporary.hpp"

namespace aggsim {

namespace fs = std::filesystem;

namespace {

const char* kind_of(const fs::file_status& status) {
  switch (status.type()) {
    case fs::file_type::directory:
      return "a folder";
    case fs::file_type::symlink:
      return "a symbolic link";
    case fs::file_type::character:
      return "a character device";
    case fs::file_type::block:
      return "a block device";
    case fs::file_type::fifo:
      return "a FIFO (named pipe)";
    case fs::file_type::socket:
      return "a socket";
    default:
      return "not a regular file";
  }
}

void check_output_file(const fs::path& path, const std::string& option,
                       const std::vector<fs::path>& protect) {
  const std::string where = fmt::format("{}: {}", option, path.string());
  if (path.empty() || path.filename().empty() || path.filename() == "." || path.filename() == "..")
    throw InputError(fmt::format("{}: needs a file name", where));
  if (path.string().find('\0') != std::string::npos)
    throw InputError(fmt::format("{}: the path holds a NUL byte (\\x00), which no file name can", where));
  check_working_directory(path, option);
  std::error_code ec;
  const fs::file_status status = fs::symlink_status(path, ec);
  if (ec && ec != std::errc::no_such_file_or_directory)
    throw InputError(fmt::format("{}: {}", where, ec.message()));
  if (fs::exists(status) && !fs::is_regular_file(status))
    throw InputError(
        fmt::format("{}: is {}; aggsim writes this output only as a regular file, new or replaced "
                    "whole: choose another path",
                    where, kind_of(status)));
  if (!fs::exists(status)) return;
  for (const auto& p : protect) {
    if (p.empty() || !fs::equivalent(path, p, ec)) continue;
    throw InputError(
        fmt::format("{}: is an input of this command ({}); aggsim never writes over its inputs: "
                    "choose another path",
                    where, p.string()));
  }
}

}  // namespace

void prepare_output_file(const fs::path& path, const std::string& option,
                         const std::vector<fs::path>& protect) {
  check_output_file(path, option, protect);
  const HeldSignals held;  // the probe must not outlive an interrupted process
  try {
    const fs::path parent = path.parent_path().empty() ? fs::path(".") : path.parent_path();
    fs::create_directories(parent);
    const Temporary probe(parent, path.filename().string());
  } catch (const fs::filesystem_error& e) {
    throw InputError(fmt::format("{}: {}: cannot write there ({}: {}); choose another path", option,
                                 path.string(), e.path1().string(), e.code().message()));
  }
}

void write_output_file(const fs::path& path, const std::string& option, const std::string& content,
                       const std::vector<fs::path>& protect) {
  check_output_file(path, option, protect);
  try {
    write_file_atomically(path, content);
  } catch (const fs::filesystem_error& e) {
    throw path_error(e);
  }
}

}  // namespace aggsim
