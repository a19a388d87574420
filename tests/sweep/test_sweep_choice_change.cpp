// Sweeping (or --set) compression.name / algorithm.name: the file's keys that only its own choice takes
// are dropped with a note; keys every choice takes stay; a key given by the sweep itself is never
// dropped, so one the new choice does not take is still an error.
#include <yaml-cpp/yaml.h>

#include <catch2/catch.hpp>

#include "sim/core/error.hpp"
#include "sim/scenario/scenario_loader.hpp"
#include "sim/sweep/sweep.hpp"
#include "sweep_support.hpp"

using namespace aggsim;
using namespace aggsim::test;

namespace {

// allgather carries every compressor, so each swept choice is a valid scenario.
const std::string kBase = R"(name: choice
seed: 3
ranks: 4
steps: 1
platform: {topology: cluster, hosts: 4}
network: alpha_beta
model: {size: 1MB, proxy_dim: 64}
algorithm: {name: allgather, op: sum}
compression: {name: powersgd, rank: 3, error_feedback: true}
)";

YAML::Node compression_of(const SweepPoint& point) {
  return YAML::Load(point.resolved)["compression"];
}

std::string expand_error(const std::string& text, const SweepExtras& extras = {}) {
  try {
    expand_sweep_text(text, "s.yaml", extras);
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("sweeping compression.name drops the keys the new compressor does not take, saying so",
          "[sweep][choice]") {
  const Sweep sweep =
      expand_sweep_text(kBase + "sweep:\n  grid:\n    compression.name: [none, topk, powersgd]\n", "s.yaml");
  REQUIRE(sweep.points.size() == 3);

  const YAML::Node none = compression_of(sweep.points[0]);
  CHECK(none["name"].Scalar() == "none");
  CHECK(!none["rank"]);
  CHECK(!none["error_feedback"]);  // `none` has no residual to feed back: it does not take the key

  const YAML::Node topk = compression_of(sweep.points[1]);
  CHECK(topk["name"].Scalar() == "topk");
  CHECK(!topk["rank"]);
  CHECK(topk["ratio"].Scalar() == "0.01");           // topk's own default
  CHECK(topk["error_feedback"].Scalar() == "true");  // every other compressor takes it: kept

  const YAML::Node powersgd = compression_of(sweep.points[2]);
  CHECK(powersgd["rank"].Scalar() == "3");  // the file's choice again: nothing dropped

  // One note per dropped key, naming the point, its choice, the key and where the file gives it.
  REQUIRE(sweep.notes.size() == 3);
  CHECK(sweep.notes[0] ==
        "sweep point 1 of 3 (compression.name=none): compression.rank (s.yaml:9:31) dropped: compressor "
        "none does not take it");
  CHECK(sweep.notes[1] ==
        "sweep point 1 of 3 (compression.name=none): compression.error_feedback (s.yaml:9:40) dropped: "
        "compressor none does not take it");
  CHECK(sweep.notes[2] ==
        "sweep point 2 of 3 (compression.name=topk): compression.rank (s.yaml:9:31) dropped: compressor "
        "topk does not take it");
}

TEST_CASE(
    "a command-line --grid on compression.name drops the same keys as a sweep block, once per point not per "
    "repeat",
    "[sweep][choice]") {
  SweepExtras extras;
  extras.grid = {"compression.name=none,powersgd"};
  extras.repeat = 2;
  const Sweep sweep = expand_sweep_text(kBase, "s.yaml", extras);
  REQUIRE(sweep.points.size() == 4);
  CHECK(!compression_of(sweep.points[0])["rank"]);
  CHECK(!compression_of(sweep.points[1])["rank"]);
  CHECK(compression_of(sweep.points[2])["rank"].Scalar() == "3");
  REQUIRE(sweep.notes.size() == 2);  // rank and error_feedback, for the first repetition only
  CHECK(sweep.notes[0].find("sweep point 1 of 4 (compression.name=none): compression.rank") == 0);
  CHECK(sweep.notes[1].find("sweep point 1 of 4 (compression.name=none): compression.error_feedback") == 0);
}

TEST_CASE("a key the sweep gives itself is never dropped: one the new compressor lacks is an error",
          "[sweep][choice]") {
  const std::string err = expand_error(
      kBase + "sweep:\n  grid:\n    compression.name: [powersgd, none]\n    compression.rank: [2, 4]\n");
  INFO(err);
  CHECK(err.find("compression.rank: unknown key") != std::string::npos);
  CHECK(err.find("in sweep point 3 of 4 (compression.name=none, compression.rank=2)") != std::string::npos);
}

TEST_CASE("a key neither choice takes stays an unknown key (a misspelling is not dropped)",
          "[sweep][choice]") {
  std::string base = kBase;
  base.replace(base.find("rank: 3"), 7, "rnak: 3");
  const std::string err = expand_error(base + "sweep:\n  grid:\n    compression.name: [none]\n");
  INFO(err);
  CHECK(err.find("s.yaml:9:31: compression.rnak: unknown key") != std::string::npos);
}

TEST_CASE("sweeping algorithm.name drops the old algorithm's own keys and keeps the common ones",
          "[sweep][choice]") {
  std::string base = kBase;
  base.replace(base.find("algorithm: {name: allgather, op: sum}"), 37,
               "algorithm: {name: tree_allreduce, chunks: 4, op: sum}");
  base.replace(base.find("compression: {name: powersgd, rank: 3, error_feedback: true}"), 60,
               "compression: {name: none}");
  const Sweep sweep = expand_sweep_text(
      base + "sweep:\n  grid:\n    algorithm.name: [ring_allreduce, tree_allreduce]\n", "s.yaml");
  REQUIRE(sweep.points.size() == 2);
  const YAML::Node ring = YAML::Load(sweep.points[0].resolved)["algorithm"];
  CHECK(ring["name"].Scalar() == "ring_allreduce");
  CHECK(!ring["chunks"]);
  CHECK(ring["op"].Scalar() == "sum");  // common to every algorithm
  CHECK(YAML::Load(sweep.points[1].resolved)["algorithm"]["chunks"].Scalar() == "4");
  REQUIRE(sweep.notes.size() == 1);
  CHECK(sweep.notes[0] ==
        "sweep point 1 of 2 (algorithm.name=ring_allreduce): algorithm.chunks (s.yaml:8:35) dropped: "
        "algorithm ring_allreduce does not take it");
}

TEST_CASE("aggsim sweep expand prints one note per dropped key on stderr", "[sweep][choice]") {
  const auto dir = fresh_dir("choice");
  write_file(dir / "s.yaml", kBase + "sweep:\n  grid:\n    compression.name: [none, powersgd]\n");
  const auto r = run_aggsim({"sweep", "expand", "s.yaml", "--out", "out"}, dir);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.err ==
        "aggsim: note: sweep point 1 of 2 (compression.name=none): compression.rank (s.yaml:9:31) dropped: "
        "compressor none does not take it\n"
        "aggsim: note: sweep point 1 of 2 (compression.name=none): compression.error_feedback (s.yaml:9:40) "
        "dropped: compressor none does not take it\n");
  const Sweep sweep = expand_sweep((dir / "s.yaml").string());
  const auto point_file = [&](int i) {
    return read_file(dir / "out" / "points" / (sweep.points[i].id + ".yaml"));
  };
  CHECK(point_file(0).find("  rank:") == std::string::npos);
  CHECK(point_file(1).find("  rank: 3\n") != std::string::npos);
  std::filesystem::remove_all(dir);
}
