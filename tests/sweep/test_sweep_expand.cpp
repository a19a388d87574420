// Sweep expansion: point counts and order, stable ids, and clear errors for bad sweeps.
#include <catch2/catch.hpp>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "sim/core/error.hpp"
#include "sim/scenario/scenario_loader.hpp"
#include "sim/sweep/slurm.hpp"
#include "sim/sweep/sweep.hpp"
#include "sweep_support.hpp"

using namespace aggsim;
using namespace aggsim::test;

namespace {

const std::string kGridZip = R"(  grid:
    ranks: [2, 4, 8]
    algorithm.op: [avg, sum]
  zip:
    model.size: [1MB, 4MB]
    steps: [2, 3]
)";

std::string expand_error(const std::string& text) {
  try {
    expand_sweep_text(text, "bad.yaml");
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("sweep expansion is the cartesian product of grid axes and zip groups, first key outermost",
          "[sweep]") {
  const Sweep sweep = expand_sweep_text(small_sweep(kGridZip), "s.yaml");
  REQUIRE(sweep.keys == std::vector<std::string>{"ranks", "algorithm.op", "model.size", "steps"});
  REQUIRE(sweep.points.size() == 3 * 2 * 2);
  std::size_t n = 0;
  for (const std::string ranks : {"2", "4", "8"})
    for (const std::string op : {"avg", "sum"})
      for (const auto& [size, steps] :
           std::vector<std::pair<std::string, std::string>>{{"1MB", "2"}, {"4MB", "3"}}) {
        const SweepPoint& p = sweep.points.at(n);
        CHECK(p.index == static_cast<int>(n));
        CHECK(p.values == std::vector<std::string>{ranks, op, size, steps});
        // Each point is the base scenario with its values applied.
        const Scenario sc = load_scenario_text(p.resolved, "point.yaml");
        CHECK(sc.ranks == std::stoi(ranks));
        CHECK(reduce_kind_name(sc.algorithm.op.kind) == op);
        CHECK(sc.model.size_bytes == (size == "1MB" ? 1000000u : 4000000u));
        CHECK(sc.steps == std::stoi(steps));
        CHECK(sc.seed == 5u);
        ++n;
      }
}

TEST_CASE("sweep point ids hash the resolved scenario: distinct, and stable across processes", "[sweep]") {
  const Sweep sweep = expand_sweep_text(small_sweep(kGridZip), "s.yaml");
  std::set<std::string> ids;
  for (const auto& p : sweep.points) {
    CHECK(p.id.size() == 12);
    CHECK(p.id == point_id(p.resolved));
    ids.insert(p.id);
  }
  CHECK(ids.size() == sweep.points.size());

  // Two separate `aggsim sweep expand` runs, in different folders, write the same manifest and points.
  const auto dir = fresh_dir("expand");
  write_file(dir / "s.yaml", small_sweep(kGridZip));
  const auto a = run_aggsim({"sweep", "expand", (dir / "s.yaml").string(), "--out", (dir / "a").string()});
  const auto b =
      run_aggsim({"sweep", "expand", (dir / "s.yaml").string(), "--out", (dir / "b").string()}, dir);
  REQUIRE(a.exit_code == 0);
  REQUIRE(b.exit_code == 0);
  CHECK(read_file(dir / "a/manifest.csv") == read_file(dir / "b/manifest.csv"));
  const auto rows = read_csv(dir / "a/manifest.csv");
  REQUIRE(rows.size() == sweep.points.size() + 1);
  for (std::size_t i = 0; i < sweep.points.size(); ++i) {
    CHECK(rows[i + 1][1] == sweep.points[i].id);
    CHECK(read_file(dir / "a/points" / (sweep.points[i].id + ".yaml")) == sweep.points[i].resolved);
  }
  // A change to the base scenario changes every id (old results are never reused by mistake).
  const Sweep other = expand_sweep_text(small_sweep(kGridZip, "description: same\n"), "s.yaml");
  const Sweep seeded = expand_sweep_text(
      small_sweep(kGridZip).replace(small_sweep(kGridZip).find("seed: 5"), 7, "seed: 6"), "s.yaml");
  CHECK(other.points[0].id == sweep.points[0].id);  // a comment-like key does not affect the run
  CHECK(seeded.points[0].id != sweep.points[0].id);
}

TEST_CASE("a zip group with lists of different lengths is rejected at the offending key's line", "[sweep]") {
  const std::string text = small_sweep("  zip:\n    model.size: [1MB, 4MB]\n    steps: [2, 3, 4]\n");
  const std::string e = expand_error(text);
  // Line 13 of the file holds `steps:` (10 scenario lines, `sweep:`, `zip:`, `model.size:`).
  CHECK_THAT(e, Catch::Contains("bad.yaml:13:") && Catch::Contains("sweep.zip.steps") &&
                    Catch::Contains("has 3 values but 'model.size' has 2") &&
                    Catch::Contains("equal lengths"));
  const auto dir = fresh_dir("zip");
  write_file(dir / "z.yaml", text);
  const auto r = run_aggsim({"sweep", "expand", (dir / "z.yaml").string(), "--out", (dir / "out").string()});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains("z.yaml:13:") && Catch::Contains("equal lengths"));
  CHECK_FALSE(std::filesystem::exists(dir / "out/manifest.csv"));
}

TEST_CASE("a bad sweep point fails expansion naming the point, its key and the value's line", "[sweep]") {
  const std::string e = expand_error(
      small_sweep("  grid:\n    ranks: [4, 32]\n    algorithm.name: [ring_allreduce, nosuch]\n"));
  CHECK_THAT(e, Catch::Contains("bad.yaml:13:") && Catch::Contains("algorithm.name") &&
                    Catch::Contains("unknown algorithm 'nosuch'") &&
                    Catch::Contains("sweep point 2 of 4 (ranks=4, algorithm.name=nosuch)"));
  // 32 ranks do not fit on 16 hosts: found at expansion, not when the point runs.
  CHECK_THAT(expand_error(small_sweep("  grid:\n    ranks: [4, 32]\n")),
             Catch::Contains("32 ranks do not fit") && Catch::Contains("sweep point 2 of 2 (ranks=32)"));
}

TEST_CASE("malformed sweep blocks are rejected with their location", "[sweep]") {
  CHECK_THAT(expand_error(small_sweep("  grid:\n    ranks: 4\n")),
             Catch::Contains("bad.yaml:12:") && Catch::Contains("expected a list of values"));
  CHECK_THAT(expand_error(small_sweep("  grid:\n    ranks: []\n")),
             Catch::Contains("must not be an empty list"));
  CHECK_THAT(expand_error(small_sweep("  gird:\n    ranks: [4]\n")),
             Catch::Contains("sweep.gird") && Catch::Contains("did you mean 'grid'"));
  CHECK_THAT(expand_error(small_sweep("  grid: {steps: [1, 2]}\n  zip: {steps: [3, 4]}\n")),
             Catch::Contains("'steps' is swept twice"));
  CHECK_THAT(expand_error(small_sweep("  grid: {model.size: [1MB, 1000000B]}\n")),
             Catch::Contains("are the same scenario"));
  CHECK_THAT(expand_error(small_sweep("  out: x\n")), Catch::Contains("needs 'grid:' and/or 'zip:'"));
  // A sweep file is not a plain scenario.
  try {
    load_scenario_text(small_sweep(kGridZip), "s.yaml");
    FAIL("loaded a sweep file as a scenario");
  } catch (const InputError& e) {
    CHECK_THAT(e.what(), Catch::Contains("aggsim sweep run"));
  }
}

TEST_CASE("zip accepts several groups, each one axis", "[sweep]") {
  const Sweep sweep = expand_sweep_text(small_sweep("  zip:\n    - {ranks: [2, 4], steps: [1, 2]}\n    - "
                                                    "{model.size: [1MB, 2MB, 3MB], seed: [1, 2, 3]}\n"),
                                        "s.yaml");
  CHECK(sweep.points.size() == 2 * 3);
  CHECK(sweep.points[4].values == std::vector<std::string>{"4", "2", "2MB", "2"});
}

TEST_CASE("the sbatch script's array stays within MaxArraySize by raising the chunk", "[sweep][slurm]") {
  const Sweep sweep = expand_sweep_text(small_sweep("  grid: {ranks: [2, 3, 4, 5, 6, 7, 8]}\n"), "s.yaml");
  const SweepFolder folder("out/s");
  SlurmOptions options;
  options.exe = "/opt/aggsim/bin/aggsim";
  options.partition = "batch";
  options.time = "00:10:00";
  options.chunk = 2;
  SlurmScript script = sbatch_script(sweep, folder, options);  // default MaxArraySize 1001
  CHECK(script.chunk == 2);
  CHECK(script.tasks == 4);  // ceil(7 / 2)
  CHECK_THAT(script.text, Catch::Contains("#SBATCH --array=0-3\n") &&
                              Catch::Contains("#SBATCH --partition=batch\n") &&
                              Catch::Contains("#SBATCH --time=00:10:00\n") &&
                              Catch::Contains("'/opt/aggsim/bin/aggsim' sweep run "));
  // Every point in exactly one task, at most `chunk` per task; the script holds ids, not values.
  std::multiset<int> placed;
  for (const auto& group : script.task_points) {
    CHECK(group.size() <= 2);
    placed.insert(group.begin(), group.end());
  }
  CHECK(placed == std::multiset<int>{0, 1, 2, 3, 4, 5, 6});
  for (const auto& p : sweep.points) CHECK_THAT(script.text, Catch::Contains(p.id));
  CHECK_THAT(script.text, !Catch::Contains("ranks="));
  options.max_array_size = 3;  // indices 0..2: three tasks at most
  script = sbatch_script(sweep, folder, options);
  CHECK(script.chunk == 3);
  CHECK(script.tasks == 3);
  CHECK_THAT(script.text, Catch::Contains("#SBATCH --array=0-2\n"));
  options.chunk = 1;
  options.max_array_size = 1001;
  CHECK(sbatch_script(sweep, folder, options).tasks == 7);
}

TEST_CASE("command-line grid axes and repetitions turn any scenario into a sweep", "[sweep][grid]") {
  std::string plain = small_sweep("  grid: {ranks: [2]}\n");
  plain = plain.substr(0, plain.find("sweep:"));  // a scenario with no sweep block
  SweepExtras extras;
  extras.grid = {"ranks=2,4", "algorithm={name: ring_allreduce, op: sum}, {name: tree_allreduce, op: avg}"};
  extras.repeat = 3;
  const Sweep sweep = expand_sweep_text(plain, "plain.yaml", extras);
  REQUIRE(sweep.keys == std::vector<std::string>{"ranks", "algorithm"});
  REQUIRE(sweep.repeat == 3);
  REQUIRE(sweep.points.size() == 2 * 2 * 3);  // commas inside {...} do not split values
  std::set<std::string> ids;
  std::map<int, std::set<std::uint64_t>> seeds_by_repeat;
  for (const auto& p : sweep.points) {
    ids.insert(p.id);
    CHECK(p.repeat == p.index % 3);  // repetitions vary fastest
    const Scenario sc = load_scenario_text(p.resolved, "p.yaml");
    seeds_by_repeat[p.repeat].insert(sc.seed);
    if (p.repeat == 0) CHECK(sc.seed == 5);  // the scenario's own seed first
  }
  CHECK(ids.size() == sweep.points.size());
  for (const auto& [r, seeds] : seeds_by_repeat) CHECK(seeds.size() == 1);  // same seed at every value
  CHECK(*seeds_by_repeat[1].begin() != *seeds_by_repeat[2].begin());
  CHECK(*seeds_by_repeat[1].begin() == repetition_seed(5, 1));
  // The same seeds on every expansion: a rerun resumes the same points.
  CHECK(expand_sweep_text(plain, "plain.yaml", extras).points.back().id == sweep.points.back().id);
}

TEST_CASE("repetitions refuse a swept seed, and --grid refuses a key the file already sweeps",
          "[sweep][grid]") {
  CHECK_THAT(expand_error(small_sweep("  grid: {seed: [1, 2]}\n  repeat: 2\n")),
             Catch::Contains("'seed' is swept and 'repeat' is set"));
  SweepExtras extras;
  extras.grid = {"ranks=2,4"};
  try {
    expand_sweep_text(small_sweep("  grid: {ranks: [2, 8]}\n"), "s.yaml", extras);
    FAIL("no error");
  } catch (const InputError& e) {
    CHECK_THAT(e.what(), Catch::Contains("key 'ranks' is swept twice"));
  }
  extras.grid = {"ranks"};
  CHECK_THROWS_WITH(expand_sweep_text(small_sweep("  grid: {steps: [1, 2]}\n"), "s.yaml", extras),
                    Catch::Contains("--grid ranks: expected key.path=value1,value2"));
  CHECK_THAT(expand_error(small_sweep("  grid: {ranks: [2]}\n  repeat: 0\n")), Catch::Contains("repeat"));
}

TEST_CASE("array tasks are balanced by estimated cost, not filled in manifest order", "[sweep][slurm]") {
  // Costs in manifest order; in order, chunks of two would load the tasks 19, 9 and 2.
  const auto groups = balance_points({10, 9, 8, 1, 1, 1}, 3, 2);
  REQUIRE(groups.size() == 3);
  const std::vector<double> costs = {10, 9, 8, 1, 1, 1};
  double heaviest = 0;
  for (const auto& g : groups) {
    CHECK(g.size() == 2);
    double load = 0;
    for (int i : g) load += costs[static_cast<std::size_t>(i)];
    heaviest = std::max(heaviest, load);
  }
  CHECK(heaviest == 11);  // the best possible: 10 + 1
}

TEST_CASE("a point's cost is its algorithm's own formula, which counts the messages a run sends",
          "[sweep][slurm]") {
  // Where the formula is exact (a ring sends 2(p-1) messages per rank and step, halving-doubling
  // 2 log2 p on a power of two), it must equal the messages the simulation counts.
  for (const std::string algorithm : {"ring_allreduce", "halving_doubling_allreduce"}) {
    INFO(algorithm);
    const std::string text =
        "ranks: 8\nsteps: 3\nplatform: {topology: cluster, hosts: 8}\nnetwork: alpha_beta\n"
        "model: {size: 1MB, math: off}\nalgorithm: {name: " +
        algorithm + "}\n";
    const auto dir = fresh_dir("cost");
    write_file(dir / "s.yaml", text);
    const auto r = run_aggsim({"run", "s.yaml", "--out", "out"}, dir);
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    const auto summary = nlohmann::json::parse(read_file(dir / "out" / "summary.json"));
    CHECK(point_cost(load_scenario_text(text, "s.yaml", {})) == summary["messages"].get<double>());
    std::filesystem::remove_all(dir);
  }
  for (const auto& entry : algorithm_table()) {
    INFO(entry.name << " has no messages_per_rank_step");
    CHECK(entry.messages_per_rank_step);
  }
  // Elsewhere it is an estimate: a parameter server's worker pushes and pulls once a step.
  CHECK(point_cost(load_scenario_text("ranks: 8\nsteps: 3\nplatform: {topology: cluster, hosts: 8}\n"
                                      "algorithm: {name: parameter_server}\n",
                                      "s.yaml", {})) == 8 * 3 * 2);
}

TEST_CASE("aggsim sweep run --grid --repeat sweeps a plain scenario from the command line", "[sweep][grid]") {
  const auto dir = fresh_dir("cligrid");
  std::string plain = small_sweep("  grid: {ranks: [2]}\n");
  write_file(dir / "plain.yaml", plain.substr(0, plain.find("sweep:")));
  const auto r =
      run_aggsim({"sweep", "run", "plain.yaml", "--grid", "ranks=2,4", "--grid",
                  "platform.bandwidth=10Gbps,100Gbps", "--repeat", "2", "--jobs", "2", "--out", "out"},
                 dir);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto rows = read_csv(dir / "out/results.csv");
  REQUIRE(rows.size() == 1 + 2 * 2 * 2);
  const int status = column(rows, "status"), repeat = column(rows, "repeat"), seed = column(rows, "seed");
  const int ranks = column(rows, "ranks"), bw = column(rows, "platform.bandwidth_Bps");
  REQUIRE((status >= 0 && repeat >= 0 && seed >= 0 && ranks >= 0 && bw >= 0));
  std::set<std::string> seeds;
  for (std::size_t i = 1; i < rows.size(); ++i) {
    CHECK(rows[i][static_cast<std::size_t>(status)] == "done");
    seeds.insert(rows[i][static_cast<std::size_t>(seed)]);
    if (rows[i][static_cast<std::size_t>(repeat)] == "0")
      CHECK(rows[i][static_cast<std::size_t>(seed)] == "5");
  }
  CHECK(seeds.size() == 2);
  // Merging again with the same axes finds the same points; without them the file is no sweep.
  CHECK(run_aggsim({"sweep", "merge", "plain.yaml", "--grid", "ranks=2,4", "--grid",
                    "platform.bandwidth=10Gbps,100Gbps", "--repeat", "2", "--out", "out"},
                   dir)
            .exit_code == 0);
  const auto bare = run_aggsim({"sweep", "merge", "plain.yaml", "--out", "out"}, dir);
  CHECK(bare.exit_code == 2);
  CHECK_THAT(bare.err, Catch::Contains("--grid key=v1,v2"));
}

TEST_CASE("sweep verbs take --set, one value at every point: run, its points and slurm",
          "[sweep][set]") {
  const auto dir = fresh_dir("sweepset");
  write_file(dir / "s.yaml", small_sweep("  grid: {ranks: [2, 4]}\n"));
  const auto r = run_aggsim({"sweep", "run", "s.yaml", "--set", "steps=1", "--set", "model.size=2MB",
                             "--jobs", "2", "--out", "out"},
                            dir);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto rows = read_csv(dir / "out/results.csv");
  REQUIRE(rows.size() == 3);
  for (std::size_t i = 1; i < rows.size(); ++i) {
    const auto run = dir / "out/runs" / rows[i][0];
    CHECK(rows[i][1] == "done");
    CHECK(read_csv(run / "steps.csv").size() == 2);  // one step, as set (the file says 2)
    CHECK(nlohmann::json::parse(read_file(run / "summary.json"))["model_bytes"] == 2000000);
  }
  // The points are other scenarios than without --set: other ids.
  const Sweep plain = expand_sweep((dir / "s.yaml").string());
  SweepExtras extras;
  extras.sets = {"steps=1", "model.size=2MB"};
  const Sweep set = expand_sweep((dir / "s.yaml").string(), extras);
  REQUIRE(set.points.size() == 2);
  CHECK(set.points[0].id == rows[1][0]);
  CHECK(set.points[0].id != plain.points[0].id);
  // A Slurm task expands the same points: the script passes --set on.
  const auto slurm = run_aggsim({"sweep", "slurm", "s.yaml", "--set", "steps=1", "--out", "sl"}, dir);
  INFO(slurm.err);
  REQUIRE(slurm.exit_code == 0);
  CHECK_THAT(read_file(dir / "sl/slurm/small.sbatch"), Catch::Contains("'--set=steps=1'"));
  // A key both set and swept (or inside a swept mapping) has no single value: refused, naming both.
  for (const char* key : {"ranks=8", "ranks.x=8"}) {
    const auto both = run_aggsim({"sweep", "expand", "s.yaml", "--set", key, "--out", "x"}, dir);
    CHECK(both.exit_code == 2);
    CHECK_THAT(both.err, Catch::Contains(std::string("--set ") + key) && Catch::Contains("'ranks' is swept"));
  }
  const auto wrong = run_aggsim({"sweep", "expand", "s.yaml", "--set", "stpes=1", "--out", "x"}, dir);
  CHECK(wrong.exit_code == 2);
  CHECK_THAT(wrong.err, Catch::Contains("stpes: unknown key (did you mean 'steps'?)"));
}
