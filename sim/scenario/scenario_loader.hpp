#pragma once
#include <string>
#include <vector>

#include "algorithms/registry.hpp"
#include "sim/scenario/scenario.hpp"

namespace aggsim {

// Reads and checks a scenario file; `overrides` are "key.path=value" strings (--set), applied
// before checking. Throws InputError ("file:line:col: key.path: message") on any problem.
Scenario load_scenario(const std::string& file, const std::vector<std::string>& overrides = {});
// Same, from text (tests, sweeps); `label` stands for the file name in messages.
Scenario load_scenario_text(const std::string& text, const std::string& label,
                            const std::vector<std::string>& overrides = {});

// The keys a scenario takes at its top level (a sweep file adds `sweep`).
std::vector<std::string> scenario_top_level_keys();

// What the scenario's algorithm entry is prepared with (the simulation adds the platform's rank
// layout).
AlgorithmConfig algorithm_config(const Scenario& scenario);

// The scenario key a prepare stage's ParamError names: "compression", the model's size
// ("model.size", or "model.layers" when a layer table sets it) for "model.size", else
// "algorithm.KEY".
std::string scenario_key_of(const Scenario& scenario, const std::string& param_key);

// One point of a sweep file: the same as load_scenario_text, but the top-level `sweep:` block
// (read by sim/sweep) is set aside first, so errors still carry the sweep file's own lines.
Scenario load_sweep_point_text(const std::string& text, const std::string& label,
                               const std::vector<std::string>& overrides);

// "compression.rank (s.yaml:14:30) dropped: compressor none does not take it": one key an override
// of the choice dropped (Scenario::dropped_keys), for the command to print.
std::string describe_dropped_key(const DroppedKey& dropped);
// Prints "aggsim: note: --set compression.name=none: <description>" on stderr for each dropped key.
void print_dropped_keys(const Scenario& scenario);

// The fully resolved scenario (every default filled in) as YAML; loading it gives the same scenario.
std::string resolved_yaml(const Scenario& scenario);

}  // namespace aggsim
