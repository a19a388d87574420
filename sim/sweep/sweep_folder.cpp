#include "sim/sweep/sweep_folder.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

#include "sim/core/input_file.hpp"
#include "sim/core/strings.hpp"
#include "sim/output/run_folder.hpp"
#include "sim/sweep/numeric_columns.hpp"

namespace aggsim {

namespace fs = std::filesystem;

void write_file_atomic(const fs::path& path, const std::string& content) {
  try {
    // Host, pid and a random token in the temporary's name: array tasks on different nodes may
    // write the same file on a shared file system.
    write_file_atomically(path, content);
  } catch (const fs::filesystem_error& e) {
    throw path_error(e);
  }
}

RunnerLock::RunnerLock(const SweepFolder& folder)
    : fd_(::open(folder.root().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)) {
  if (fd_ < 0)
    throw InputError(
        fmt::format("{}: cannot open the sweep folder: {}", folder.root().string(), std::strerror(errno)));
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    ::close(fd_);
    throw InputError(
        fmt::format("{}: another 'aggsim sweep run' is running on this folder; wait for it to end or "
                    "stop it (its finished points are kept)",
                    folder.root().string()));
  }
}

RunnerLock::~RunnerLock() {
  ::close(fd_);
}

std::string read_text_file(const fs::path& path) {
  // A regular file of bounded size only: a FIFO or a device put in a sweep folder must not block
  // or flood a merge.
  std::error_code ec;
  if (!fs::is_regular_file(fs::symlink_status(path, ec)) || fs::file_size(path, ec) > kMaxInputBytes || ec)
    return "";
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

namespace {

void write_if_changed(const fs::path& path, const std::string& content) {
  if (fs::exists(path) && read_text_file(path) == content) return;
  write_file_atomic(path, content);
}

// The failure's gist for one CSV cell: stderr's non-empty lines joined, bounded.
std::string error_summary(const std::string& log) {
  std::string out;
  std::istringstream in(log);
  for (std::string line; std::getline(in, line);) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    out += (out.empty() ? "" : " | ") + line;
  }
  return out.size() > 600 ? out.substr(0, 600) + "..." : out;
}

std::string json_cell(const nlohmann::ordered_json& v) {
  return v.is_string() ? v.get<std::string>() : v.dump();
}

}  // namespace

std::optional<nlohmann::ordered_json> SweepFolder::summary(const std::string& id) const {
  const fs::path file = run_dir(id) / "summary.json";
  std::error_code ec;
  if (!fs::is_regular_file(file, ec)) return std::nullopt;
  auto j = nlohmann::ordered_json::parse(read_text_file(file), nullptr, false);
  if (j.is_discarded() || !j.is_object()) return std::nullopt;
  return j;
}

bool SweepFolder::finished(const std::string& id) const {
  return summary(id).has_value();
}

bool SweepFolder::damaged(const std::string& id) const {
  std::error_code ec;
  return fs::exists(run_dir(id) / "summary.json", ec) && !finished(id);
}

bool SweepFolder::failed(const std::string& id) const {
  return fs::is_regular_file(failure_log(id));
}

void SweepFolder::check(const std::string& sweep_file) const {
  check_output_folder(root_, FolderKind::sweep, {sweep_file});
}

void SweepFolder::write_expansion(const Sweep& sweep) const {
  // The marker first: a folder interrupted at any later point (a full disk, a signal) is one aggsim
  // wrote, so the rerun that completes it is not refused.
  write_if_changed(root_ / folder_marker(FolderKind::sweep), folder_marker_text(FolderKind::sweep));
  std::vector<std::string> header = {"index", "id"};
  header.insert(header.end(), sweep.keys.begin(), sweep.keys.end());
  if (sweep.repeat > 1) header.push_back("repeat");
  header.push_back("scenario");
  std::string csv = csv_row(header);
  nlohmann::ordered_json manifest;
  manifest["sweep"] = sweep.file;
  manifest["name"] = sweep.name;
  manifest["keys"] = sweep.keys;
  if (sweep.repeat > 1) manifest["repeat"] = sweep.repeat;
  manifest["points"] = nlohmann::ordered_json::array();
  for (const auto& p : sweep.points) {
    const std::string scenario = fs::path("points") / (p.id + ".yaml");
    write_if_changed(point_file(p.id), p.resolved);
    std::vector<std::string> row = {std::to_string(p.index), p.id};
    row.insert(row.end(), p.values.begin(), p.values.end());
    if (sweep.repeat > 1) row.push_back(std::to_string(p.repeat));
    row.push_back(scenario);
    csv += csv_row(row);
    nlohmann::ordered_json values;
    for (std::size_t k = 0; k < sweep.keys.size(); ++k) values[sweep.keys[k]] = p.values[k];
    nlohmann::ordered_json entry = {{"index", p.index}, {"id", p.id}, {"values", values}};
    if (sweep.repeat > 1) entry["repeat"] = p.repeat;
    entry["scenario"] = scenario;
    manifest["points"].push_back(entry);
  }
  write_if_changed(root_ / "manifest.csv", csv);
  write_if_changed(root_ / "manifest.json", manifest.dump(2) + "\n");
}

void SweepFolder::record_failure(const std::string& id, const std::string& log) const {
  write_file_atomic(failure_log(id), log);
}

void SweepFolder::clear_failure(const std::string& id) const {
  std::error_code ignored;
  fs::remove(failure_log(id), ignored);
}

void SweepFolder::remove_stale_temporaries() const {
  for (const char* sub : {"", "runs", "points", "failed", "slurm"})
    aggsim::remove_stale_temporaries(root_ / sub);
}

std::string SweepFolder::merge(const Sweep& sweep) const {
  // Summary fields in first-seen order over the finished points (all share one layout today).
  std::vector<std::string> fields;
  std::vector<nlohmann::ordered_json> summaries(sweep.points.size());
  for (std::size_t i = 0; i < sweep.points.size(); ++i) {
    const std::string& id = sweep.points[i].id;
    auto j = summary(id);
    if (!j) continue;
    summaries[i] = std::move(*j);
    // A field named like a swept key (ranks, steps, ...) would repeat that column.
    for (const auto& item : summaries[i].items())
      if (std::find(fields.begin(), fields.end(), item.key()) == fields.end() &&
          std::find(sweep.keys.begin(), sweep.keys.end(), item.key()) == sweep.keys.end())
        fields.push_back(item.key());
  }
  // Each swept key's values as written, then (for quantities with units) the same in SI base units.
  std::vector<std::optional<NumericColumn>> numeric(sweep.keys.size());
  for (std::size_t k = 0; k < sweep.keys.size(); ++k) {
    std::vector<std::string> values;
    for (const auto& p : sweep.points) values.push_back(p.values[k]);
    numeric[k] = numeric_column(sweep.keys[k], values);
  }
  std::vector<std::string> header = {"id", "status"};
  for (std::size_t k = 0; k < sweep.keys.size(); ++k) {
    header.push_back(sweep.keys[k]);
    if (numeric[k]) header.push_back(numeric[k]->name);
  }
  if (sweep.repeat > 1) header.push_back("repeat");
  header.insert(header.end(), fields.begin(), fields.end());
  header.push_back("error");
  std::string csv = csv_row(header);
  int done = 0, failed_count = 0, pending = 0;
  for (std::size_t i = 0; i < sweep.points.size(); ++i) {
    const SweepPoint& p = sweep.points[i];
    const bool is_done = !summaries[i].is_null(), is_damaged = !is_done && damaged(p.id);
    const bool is_failed = !is_done && (is_damaged || failed(p.id));
    done += is_done;
    failed_count += is_failed;
    pending += !is_done && !is_failed;
    std::vector<std::string> row = {p.id, is_done ? "done" : is_failed ? "failed" : "pending"};
    for (std::size_t k = 0; k < sweep.keys.size(); ++k) {
      row.push_back(p.values[k]);
      if (numeric[k]) row.push_back(numeric[k]->cells[i]);
    }
    if (sweep.repeat > 1) row.push_back(std::to_string(p.repeat));
    for (const auto& f : fields) row.push_back(summaries[i].contains(f) ? json_cell(summaries[i][f]) : "");
    std::string error;
    if (is_damaged)
      error = fmt::format("{}: damaged (not a JSON object); the point runs again on the next sweep run",
                          (run_dir(p.id) / "summary.json").string());
    else if (is_failed)
      error = error_summary(read_text_file(failure_log(p.id)));
    row.push_back(error);
    csv += csv_row(row);
  }
  write_file_atomic(results_file(), csv);
  return fmt::format("{} done, {} failed, {} pending", done, failed_count, pending);
}

}  // namespace aggsim
