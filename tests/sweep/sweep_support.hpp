#pragma once
// Helpers for the sweep tests: sweep files in temp folders, CSV reading (background runs: support/process_group.hpp).
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "support/cli.hpp"
#include "support/process_group.hpp"

namespace aggsim::test {

// A small sweep on a generated cluster under alpha_beta, reductions free: every point's cost has
// an alpha-beta closed form.
inline std::string small_sweep(const std::string& sweep_block, const std::string& extra = "") {
  return R"(name: small
seed: 5
ranks: 4
steps: 2
platform: {topology: cluster, hosts: 16, bandwidth: 10Gbps, latency: 1us}
network: alpha_beta
model: {size: 1MB, proxy_dim: 64}
algorithm: {name: ring_allreduce, op: avg}
compute: {reduce_speed: 0}
)" + extra +
         "sweep:\n" + sweep_block;
}

// Rows of a simple CSV (no quoted commas in the cells we compare), header first.
inline std::vector<std::vector<std::string>> read_csv(const std::filesystem::path& p) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream in(read_file(p));
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> cells;
    std::stringstream ss(line);
    for (std::string cell; std::getline(ss, cell, ',');) cells.push_back(cell);
    rows.push_back(cells);
  }
  return rows;
}

inline int column(const std::vector<std::vector<std::string>>& rows, const std::string& name) {
  for (std::size_t i = 0; i < rows.at(0).size(); ++i)
    if (rows[0][i] == name) return static_cast<int>(i);
  return -1;
}

inline std::set<std::string> finished_points(const std::filesystem::path& out) {
  std::set<std::string> ids;
  if (!std::filesystem::is_directory(out / "runs")) return ids;
  for (const auto& e : std::filesystem::directory_iterator(out / "runs")) {
    // A ".<id>.tmp-<pid>" folder is a run still being written (or cut short by a kill): not finished.
    const std::string name = e.path().filename().string();
    if (name[0] != '.' && std::filesystem::is_regular_file(e.path() / "summary.json")) ids.insert(name);
  }
  return ids;
}

}  // namespace aggsim::test
