#pragma once
// Sweep files: a scenario plus a `sweep:` block that varies some of its keys.
//
//   sweep:
//     grid:                      # cartesian product, first key outermost
//       ranks: [8, 16]
//       algorithm.name: [ring_allreduce, hierarchical_allreduce]
//     zip:                       # lists varied together (equal lengths); or a list of such groups
//       model.size: [1MB, 100MB]
//       steps: [20, 5]
//     repeat: 3                  # optional: each point with 3 seeds derived from the base seed
//     out: out/my-sweep          # optional default output folder (else out/<name>)
//
// Each point is the base scenario with one value per swept key applied as a `--set` override, and
// is fully checked at expansion time. Its id is a hash of its resolved scenario, so it is stable
// across runs and machines and changes whenever anything that affects the run changes.
#include <cstdint>
#include <string>
#include <vector>

#include "sim/core/params.hpp"

namespace aggsim {

struct Scenario;

// The most points one sweep expands (each is checked, then run in its own process): a sweep of more,
// counted with overflow checks from its axes before any point is made, is refused.
constexpr std::uint64_t kMaxSweepPoints = 100000;

// The keys of the `sweep:` block (what the reader expects, and `aggsim list --keys` prints).
std::vector<ParamSpec> sweep_param_specs();

struct SweepPoint {
  int index = 0;                       // position in expansion order
  std::string id;                      // 12 hex digits of the resolved scenario's hash
  std::vector<std::string> values;     // one per Sweep::keys, as YAML (flow style) text
  std::vector<std::string> overrides;  // "key=value", as for --set
  std::string resolved;                // the point's resolved scenario (YAML)
  int repeat = 0;                      // which repetition (0 .. Sweep::repeat - 1)
  double cost = 1;                     // point_cost() of its scenario
};

struct Sweep {
  std::string file;               // the sweep file as given
  std::string name;               // the base scenario's name
  std::string default_out;        // sweep.out, else out/<name>
  std::vector<std::string> keys;  // swept key paths: grid keys, then zip keys
  int repeat = 1;                 // runs per combination of swept values, each with its own seed
  std::uint64_t planned_points = 0;  // the axes' product times repeat, known before any point is made
  std::vector<SweepPoint> points;
  // One line per key a point's choice dropped ("sweep point 1 of 3 (compression.name=none):
  // compression.rank (s.yaml:4:30) dropped: ..."), for the command to print; repetitions are not
  // repeated.
  std::vector<std::string> notes;
};

// Sweep axes given on the command line (`--grid key=v1,v2 --repeat N`): added to the file's
// sweep block, or making a sweep of a plain scenario.
struct SweepExtras {
  std::vector<std::string> grid;  // "key=v1,v2,..." (values are YAML; commas inside [] or {} stay)
  int repeat = 0;                 // 0: the file's (default 1)
  // "key=value" (--set): applied to every point before its swept values; a key may not be both set
  // and swept.
  std::vector<std::string> sets;
};

// The seed of repetition r of a scenario whose seed is `base`: r = 0 keeps it, others are derived.
std::uint64_t repetition_seed(std::uint64_t base, int r);

// Reads the sweep block only (name, keys, output folder): no point is loaded or checked.
Sweep read_sweep_header(const std::string& file, const SweepExtras& extras = {});
Sweep read_sweep_header_text(const std::string& text, const std::string& label, const SweepExtras& extras = {});
// Reads, expands and checks every point. Throws InputError ("file:line:col: ..." or naming the point).
Sweep expand_sweep(const std::string& file, const SweepExtras& extras = {});
Sweep expand_sweep_text(const std::string& text, const std::string& label, const SweepExtras& extras = {});

// Rough cost of a scenario in simulated messages: ranks x steps x its algorithm's messages per rank
// and step (the algorithm's own formula, AlgorithmInfo::messages_per_rank_step). A sweep's Slurm
// array balances its tasks by it.
double point_cost(const Scenario& scenario);

// Stable 12-hex-digit id of a resolved scenario text (64-bit FNV-1a).
std::string point_id(const std::string& resolved_yaml);

// "key=value, key=value" for messages.
std::string describe_point(const Sweep& sweep, const SweepPoint& point);

}  // namespace aggsim
