#pragma once
// Two runs of one scenario by two paths (a full simulation and a replay, separate and merged flows):
// the faster path's files against the slower one's, within the README's bound for times.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "support/cli.hpp"
#include "support/csv.hpp"

namespace aggsim::test {

// Writes `yaml` to dir/name.yaml and runs it into dir/name (which it returns); requires success.
inline std::filesystem::path run_named(const std::filesystem::path& dir, const std::string& name,
                                       const std::string& yaml) {
  write_file(dir / (name + ".yaml"), yaml);
  const auto r = run_aggsim({"run", name + ".yaml", "--out", name, "-q"}, dir);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return dir / name;
}

// steps.csv of both runs: times within 1e-9 of the simulated time plus `extra` seconds, bandwidths
// within the same share of the step's time (1e-9 relative at least), every other cell equal.
inline void check_same_steps(const std::filesystem::path& slow, const std::filesystem::path& fast,
                             double sim_time, double extra = 0) {
  const double tolerance = 1e-9 * sim_time + extra;
  static const std::set<std::string> times = {"step_time_s", "comm_time_s",         "compute_time_s",
                                              "end_time_s",  "exposed_comm_time_s", "hidden_comm_time_s",
                                              "exposed_gather_time_s"};
  static const std::set<std::string> bandwidths = {"algbw_GBps", "busbw_GBps"};
  const auto a = parse_csv(read_file(slow / "steps.csv"));
  const auto b = parse_csv(read_file(fast / "steps.csv"));
  REQUIRE(a.size() == b.size());
  REQUIRE(a[0] == b[0]);
  const auto step_time = std::find(a[0].begin(), a[0].end(), "step_time_s") - a[0].begin();
  for (std::size_t row = 1; row < a.size(); ++row)
    for (std::size_t c = 0; c < a[0].size(); ++c) {
      const std::string& column = a[0][c];
      INFO("step " << a[row][0] << ", " << column << ": " << a[row][c] << " vs " << b[row][c]);
      if (times.count(column) && !a[row][c].empty())
        CHECK(std::abs(std::stod(a[row][c]) - std::stod(b[row][c])) <= tolerance);
      else if (bandwidths.count(column) && !a[row][c].empty())
        CHECK(std::abs(std::stod(a[row][c]) / std::stod(b[row][c]) - 1) <=
              std::max(1e-9, 2 * extra / std::stod(a[row][static_cast<std::size_t>(step_time)])));
      else
        CHECK(a[row][c] == b[row][c]);
    }
}

// collectives.csv of both runs: start, end and time within 1e-9 of the simulated time plus `extra`
// seconds, bandwidths within the same share of the call's time, every other cell equal.
inline void check_same_collectives(const std::filesystem::path& slow, const std::filesystem::path& fast,
                                   double sim_time, double extra = 0) {
  const double tolerance = 1e-9 * sim_time + extra;
  static const std::set<std::string> times = {"start_s", "end_s", "time_s"};
  static const std::set<std::string> bandwidths = {"algbw_GBps", "busbw_GBps"};
  const auto a = parse_csv(read_file(slow / "collectives.csv"));
  const auto b = parse_csv(read_file(fast / "collectives.csv"));
  REQUIRE(a.size() == b.size());
  REQUIRE(a[0] == b[0]);
  const auto time = std::find(a[0].begin(), a[0].end(), "time_s") - a[0].begin();
  for (std::size_t row = 1; row < a.size(); ++row)
    for (std::size_t c = 0; c < a[0].size(); ++c) {
      const std::string& column = a[0][c];
      INFO("call " << a[row][0] << "/" << a[row][1] << ", " << column << ": " << a[row][c] << " vs "
                   << b[row][c]);
      if (times.count(column) && !a[row][c].empty())
        CHECK(std::abs(std::stod(a[row][c]) - std::stod(b[row][c])) <= tolerance);
      else if (bandwidths.count(column) && !a[row][c].empty())
        CHECK(std::abs(std::stod(a[row][c]) / std::stod(b[row][c]) - 1) <=
              std::max(1e-9, 2 * tolerance / std::stod(a[row][static_cast<std::size_t>(time)])));
      else
        CHECK(a[row][c] == b[row][c]);
    }
}

// summary.json of both runs, as check_same_steps, but for the keys in `differ` (the fields that say
// which path ran), which the caller checks.
inline void check_same_summary(const nlohmann::json& slow, const nlohmann::json& fast,
                               const std::set<std::string>& differ, double extra = 0) {
  const double sim_time = slow["sim_time_s"].get<double>();
  const double tolerance = 1e-9 * sim_time + extra;
  for (const auto& [key, value] : slow.items()) {
    INFO(key << ": " << value << " vs " << fast[key]);
    if (differ.count(key)) continue;
    if (key == "sim_time_s" || key == "mean_step_time_s" || key == "exposed_comm_time_s" ||
        key == "hidden_comm_time_s" || key == "time_to_target_s" || key == "collective_time_s" ||
        key == "exposed_gather_time_s") {
      if (value.is_null()) {
        CHECK(fast[key].is_null());
      } else {
        CHECK(std::abs(value.get<double>() - fast[key].get<double>()) <= tolerance);
      }
    } else if (key == "algbw_GBps" || key == "busbw_GBps") {
      // Bytes over the calls' transfer time: relative to that time, not to the step's.
      if (!value.is_null())
        CHECK(std::abs(value.get<double>() / fast[key].get<double>() - 1) <=
              std::max(1e-9, 2 * extra / slow["collective_time_s"].get<double>()));
    } else {
      CHECK(value == fast[key]);
    }
  }
  CHECK(slow.size() == fast.size());
}

}  // namespace aggsim::test
