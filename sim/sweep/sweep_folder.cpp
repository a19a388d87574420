#include "sim/sweep/sweep_folder.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

#include "sim/sweep/numeric_columns.hpp"

namespace aggsim {

namespace fs = std::filesystem;

void write_file_atomic(const fs::path& path, const std::string& content) {
  fs::create_directories(path.parent_path().empty() ? fs::path(".") : path.parent_path());
  // Host and pid: array tasks on different nodes may write the same file on a shared file system.
  char host[256] = "host";
  ::gethostname(host, sizeof host - 1);
  const fs::path tmp =
      path.parent_path() / fmt::format(".{}.tmp-{}-{}", path.filename().string(), host, ::getpid());
  {
    std::ofstream out(tmp, std::ios::binary);
    out << content;
    out.close();
    if (!out) throw std::runtime_error(fmt::format("cannot write {}", tmp.string()));
  }
  fs::rename(tmp, path);
}

std::string read_text_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\n\r") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

namespace {

void write_if_changed(const fs::path& path, const std::string& content) {
  if (fs::exists(path) && read_text_file(path) == content) return;
  write_file_atomic(path, content);
}

std::string csv_row(const std::vector<std::string>& fields) {
  std::string row;
  for (std::size_t i = 0; i < fields.size(); ++i) row += (i ? "," : "") + csv_field(fields[i]);
  return row + "\n";
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

bool SweepFolder::finished(const std::string& id) const {
  return fs::is_regular_file(run_dir(id) / "summary.json");
}

bool SweepFolder::failed(const std::string& id) const {
  return fs::is_regular_file(failure_log(id));
}

void SweepFolder::write_expansion(const Sweep& sweep) const {
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
  const fs::path runs = root_ / "runs";
  if (!fs::is_directory(runs)) return;
  std::vector<fs::path> stale;
  for (const auto& entry : fs::directory_iterator(runs)) {
    const std::string name = entry.path().filename().string();
    if (!name.empty() && name[0] == '.' &&
        (name.find(".tmp-") != std::string::npos || name.find(".old-") != std::string::npos))
      stale.push_back(entry.path());
  }
  for (const auto& p : stale) fs::remove_all(p);
}

std::string SweepFolder::merge(const Sweep& sweep) const {
  // Summary fields in first-seen order over the finished points (all share one layout today).
  std::vector<std::string> fields;
  std::vector<nlohmann::ordered_json> summaries(sweep.points.size());
  for (std::size_t i = 0; i < sweep.points.size(); ++i) {
    const std::string& id = sweep.points[i].id;
    if (!finished(id)) continue;
    summaries[i] = nlohmann::ordered_json::parse(read_text_file(run_dir(id) / "summary.json"));
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
    const bool is_done = finished(p.id), is_failed = !is_done && failed(p.id);
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
    row.push_back(is_failed ? error_summary(read_text_file(failure_log(p.id))) : "");
    csv += csv_row(row);
  }
  write_file_atomic(results_file(), csv);
  return fmt::format("{} done, {} failed, {} pending", done, failed_count, pending);
}

}  // namespace aggsim
