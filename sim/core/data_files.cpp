#include "sim/core/data_files.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "sim/core/error.hpp"
#include "sim/core/input_file.hpp"

namespace aggsim {

namespace fs = std::filesystem;

namespace {

// Where each kind's shipped files sit in the data folder, and their extension.
struct KindPlace {
  std::vector<std::string> folders;
  std::string extension;
};

KindPlace place_of(DataKind kind) {
  switch (kind) {
    case DataKind::scenario:
      return {{"scenarios", "scenarios/sweeps", "scenarios/compression"}, ".yaml"};
    case DataKind::platform:
      return {{"platforms"}, ".xml"};
    case DataKind::layer_table:
      return {{"scenarios/models"}, ".yaml"};
    case DataKind::calibration:
      return {{}, ".yaml"};
    case DataKind::msccl_program:
      return {{"algorithms/msccl/programs"}, ".xml"};
    case DataKind::other:
      return {};
  }
  return {};
}

bool is_folder(const fs::path& p) {
  std::error_code ec;
  return fs::is_directory(p, ec);
}

// <prefix>/share/aggsim beside <prefix>/bin/aggsim, when it holds the data.
std::string installed_folder() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return "";
#ifdef AGGSIM_DATA_FROM_BIN
  const fs::path share = (exe.parent_path() / AGGSIM_DATA_FROM_BIN).lexically_normal();
#else
  const fs::path share = exe.parent_path().parent_path() / "share" / "aggsim";
#endif
  return is_folder(share / "platforms") ? share.string() : "";
}

}  // namespace

std::string data_folder() {
  if (const char* env = std::getenv("AGGSIM_DATA"); env && *env) {
    if (!is_folder(env))
      throw InputError(
          fmt::format("AGGSIM_DATA={}: not a folder (it names the folder holding the shipped "
                      "platforms/ and scenarios/; unset it to use the installed ones)",
                      env));
    return env;
  }
  if (const std::string installed = installed_folder(); !installed.empty()) return installed;
#ifdef AGGSIM_SOURCE_DATA_DIR
  if (is_folder(fs::path(AGGSIM_SOURCE_DATA_DIR) / "platforms")) return AGGSIM_SOURCE_DATA_DIR;
#endif
  return "";
}

std::vector<std::string> data_candidates(const std::string& given, const std::string& referrer_dir,
                                         DataKind kind) {
  const fs::path p(given);
  std::vector<std::string> out = {given};
  if (p.is_relative() && !referrer_dir.empty()) out.push_back((fs::path(referrer_dir) / p).string());
  if (!p.is_relative() || given.empty()) return out;
  const std::string data = data_folder();
  if (data.empty()) return out;
  out.push_back((fs::path(data) / p).lexically_normal().string());
  // A bare name (no folder, no extension) names a shipped file of its kind.
  const KindPlace place = place_of(kind);
  if (given.find('/') == std::string::npos && !p.has_extension())
    for (const auto& folder : place.folders)
      out.push_back((fs::path(data) / folder / (given + place.extension)).string());
  return out;
}

std::string find_data_file(const std::string& given, const std::string& referrer_dir, DataKind kind,
                           const std::string& what) {
  for (const auto& c : data_candidates(given, referrer_dir, kind))
    if (input_path_exists(c, what)) return fs::path(c).lexically_normal().string();
  return "";
}

std::vector<std::string> shipped_names(DataKind kind) {
  std::vector<std::string> names;
  std::string data;
  try {
    data = data_folder();
  } catch (const InputError&) {
    return names;
  }
  if (data.empty()) return names;
  const KindPlace place = place_of(kind);
  for (const auto& folder : place.folders) {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(fs::path(data) / folder, ec))
      if (e.path().extension() == place.extension) names.push_back(e.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace aggsim
