#pragma once
// The keys of a scenario that no component declares (the top level, the choice between a platform
// file and a generator, compute, engine, parallel, output), as ParamSpecs: the loader reads them
// through these specs, and `aggsim list --keys` prints them beside the components' own (algorithms,
// compressors, topologies, model, workload), so the key reference cannot drift from what the loader accepts.
#include <string>
#include <vector>

#include "sim/core/params.hpp"

namespace aggsim {

// Scalar keys of the top level: name, description, seed, ranks, steps, network, calibration.
std::vector<ParamSpec> top_level_param_specs();
// The mappings a scenario holds at its top level, in the order the reference lists them.
const std::vector<std::string>& scenario_sections();
// The keys of `platform:` beside a generator's own (which are its topology's): a file or a
// generator, the fabric between nodes, and a generated platform's overrides.
std::vector<ParamSpec> platform_param_specs();
// `platform.overrides:` entries: a selector, then override_param_specs() values.
std::vector<ParamSpec> override_selector_param_specs();
// `compute:`, with straggler_param_specs() under `straggler.`.
std::vector<ParamSpec> compute_param_specs();
std::vector<ParamSpec> engine_param_specs();
// `parallel:` (tensor x pipeline x data layout, Megatron-LM's order).
std::vector<ParamSpec> parallel_param_specs();
std::vector<ParamSpec> output_param_specs();
// The names of the keys `specs` declares at its top level (a nested group counts once, as its
// prefix): what a mapping read through them expects.
std::vector<std::string> spec_keys(const std::vector<ParamSpec>& specs);

// Network presets as `network:` spells them.
std::vector<std::string> network_preset_names();

}  // namespace aggsim
