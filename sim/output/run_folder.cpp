#include "sim/output/run_folder.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace aggsim {

namespace fs = std::filesystem;

void write_run_folder(const std::string& dir, const std::vector<OutputFile>& files) {
  const fs::path target = fs::path(dir).lexically_normal();
  const fs::path parent = target.has_parent_path() ? target.parent_path() : fs::path(".");
  const std::string base = target.filename().string();
  fs::create_directories(parent);
  const fs::path tmp = parent / fmt::format(".{}.tmp-{}", base, ::getpid());
  const fs::path old = parent / fmt::format(".{}.old-{}", base, ::getpid());
  fs::remove_all(tmp);
  try {
    fs::create_directory(tmp);
    for (const auto& [name, content] : files) {
      std::ofstream out(tmp / name, std::ios::binary);
      out << content;
      out.close();
      if (!out) throw std::runtime_error(fmt::format("cannot write {}", (tmp / name).string()));
    }
    if (fs::exists(target)) fs::rename(target, old);
    fs::rename(tmp, target);
    fs::remove_all(old);
  } catch (...) {
    std::error_code ignored;
    fs::remove_all(tmp, ignored);
    if (!fs::exists(target, ignored) && fs::exists(old, ignored)) fs::rename(old, target, ignored);
    throw;
  }
}

}  // namespace aggsim
