// Watching a run: the start line, the heartbeat (--progress, --progress-interval, -q, not a
// terminal) and the engine's debug log of step boundaries and aggregations. A heartbeat reads the
// run and never changes it.
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>

#include "support/cli.hpp"

using namespace aggsim::test;
namespace fs = std::filesystem;

namespace {

constexpr int kRanks = 8, kSteps = 5;

fs::path write_scenario(const fs::path& dir) {
  write_file(dir / "watched.yaml", fmt::format(R"(name: watched
ranks: {0}
steps: {1}
platform: {{topology: cluster, hosts: {0}, bandwidth: 10Gbps, latency: 1us}}
network: alpha_beta
model: {{size: 1MB, proxy_dim: 64}}
algorithm: {{name: ring_allreduce}}
)",
                                               kRanks, kSteps));
  return dir / "watched.yaml";
}

struct Beat {
  bool done = false;
  int steps = 0, total = 0;
  double sim_time = 0;
  std::uint64_t messages = 0;
  std::string remaining;
};

std::vector<Beat> heartbeats(const std::string& err) {
  static const std::regex line(
      R"(aggsim: (done: )?steps (\d+)/(\d+), simulated (\S+) s, messages (\d+) \((\d+)/s\), elapsed [^,]+, remaining (.+))");
  std::vector<Beat> beats;
  std::istringstream in(err);
  for (std::string text; std::getline(in, text);) {
    std::smatch m;
    if (!std::regex_match(text, m, line)) continue;
    beats.push_back(
        {m[1].matched, std::stoi(m[2]), std::stoi(m[3]), std::stod(m[4]), std::stoull(m[5]), m[7]});
  }
  return beats;
}

std::map<std::string, std::string> folder_files(const fs::path& dir) {
  std::map<std::string, std::string> files;
  for (const auto& e : fs::directory_iterator(dir)) files[e.path().filename().string()] = read_file(e.path());
  return files;
}

}  // namespace

TEST_CASE("heartbeats under --progress grow to the run's totals", "[progress]") {
  const auto dir = fresh_dir("progress");
  const fs::path scenario = write_scenario(dir);
  const auto r = run_aggsim(
      {"run", scenario.string(), "--out", (dir / "out").string(), "--progress", "--progress-interval", "0"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto summary = nlohmann::json::parse(read_file(dir / "out" / "summary.json"));

  // The start line says what runs where.
  CHECK_THAT(r.err,
             Catch::Contains(fmt::format("aggsim: running watched: ring_allreduce, {} ranks on cluster ({} "
                                         "hosts), network alpha_beta (between nodes 2 us, 1.25 GB/s), {} steps -> {}",
                                         kRanks, kRanks, kSteps, (dir / "out").string())));

  const auto beats = heartbeats(r.err);
  REQUIRE(beats.size() >= 3);  // at least two while running (interval 0) and the final one
  for (std::size_t i = 0; i < beats.size(); ++i) {
    CHECK(beats[i].total == kSteps);
    CHECK(beats[i].done == (i + 1 == beats.size()));
    if (i > 0) {
      CHECK(beats[i].steps >= beats[i - 1].steps);
      CHECK(beats[i].messages >= beats[i - 1].messages);
      CHECK(beats[i].sim_time >= beats[i - 1].sim_time);
    }
    if (beats[i].steps == 0) CHECK(beats[i].remaining == "?");
    if (beats[i].steps > 0) CHECK(beats[i].remaining != "?");
  }
  CHECK(beats.front().steps < kSteps);
  const Beat& last = beats.back();
  CHECK(last.steps == kSteps);
  CHECK(last.messages == summary["messages"].get<std::uint64_t>());
  // A ring all-reduce sends 2(p-1) messages per rank and step: an independent count.
  CHECK(last.messages == static_cast<std::uint64_t>(kSteps * kRanks * 2 * (kRanks - 1)));
  CHECK(last.sim_time == Approx(summary["sim_time_s"].get<double>()).epsilon(1e-5));
  // Between the first and the last, steps went up one by one at least once.
  std::set<int> seen;
  for (const auto& b : beats) seen.insert(b.steps);
  CHECK(seen.size() >= 2);
}

TEST_CASE("the heartbeat is off when stderr is not a terminal and -q silences everything", "[progress]") {
  const auto dir = fresh_dir("progress-off");
  const fs::path scenario = write_scenario(dir);
  const auto plain = run_aggsim({"run", scenario.string(), "--out", (dir / "plain").string()});
  REQUIRE(plain.exit_code == 0);
  CHECK(heartbeats(plain.err).empty());
  CHECK_THAT(plain.err, Catch::Contains("aggsim: running watched:"));
  const auto quiet = run_aggsim({"run", scenario.string(), "--out", (dir / "quiet").string(), "-q",
                                 "--progress", "--progress-interval", "0"});
  REQUIRE(quiet.exit_code == 0);
  CHECK(quiet.err.empty());
  CHECK(quiet.out.empty());
  const auto both = run_aggsim({"run", scenario.string(), "--progress", "--no-progress"});
  CHECK(both.exit_code == 2);
}

TEST_CASE("a run folder is byte-identical with and without the heartbeat", "[progress]") {
  const auto dir = fresh_dir("progress-same");
  const fs::path scenario = write_scenario(dir);
  for (const bool trace : {false, true}) {
    const std::string set = fmt::format("output.trace={}", trace);
    const auto a =
        run_aggsim({"run", scenario.string(), "--out", (dir / "a").string(), "--set", set, "--force"});
    const auto b = run_aggsim({"run", scenario.string(), "--out", (dir / "b").string(), "--set", set,
                               "--force", "--progress", "--progress-interval", "0"});
    REQUIRE(a.exit_code == 0);
    REQUIRE(b.exit_code == 0);
    REQUIRE_FALSE(heartbeats(b.err).empty());
    const auto files_a = folder_files(dir / "a"), files_b = folder_files(dir / "b");
    CHECK(files_a.size() == (trace ? 7u : 5u));  // with the hidden run marker
    CHECK(files_a == files_b);
  }
}

TEST_CASE("the engine's debug log shows step boundaries and each rank's aggregation", "[progress]") {
  const auto dir = fresh_dir("progress-log");
  const fs::path scenario = write_scenario(dir);
  const auto r = run_aggsim(
      {"run", scenario.string(), "--out", (dir / "out").string(), "-q", "--log=aggsim_engine.thres:debug"});
  REQUIRE(r.exit_code == 0);
  for (int step = 0; step < kSteps; ++step) {
    CHECK_THAT(r.err, Catch::Contains(fmt::format("step {} finished by all {} ranks", step, kRanks)));
    for (int rank = 0; rank < kRanks; ++rank) {
      CHECK_THAT(r.err, Catch::Contains(fmt::format("rank {} step {}: aggregation starts", rank, step)));
      CHECK_THAT(r.err, Catch::Contains(fmt::format("rank {} step {}: aggregation ends", rank, step)));
    }
  }
}
