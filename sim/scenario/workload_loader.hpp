#pragma once
// Reading and writing back the training-related parts of a scenario: `model:` (a size or a layer
// table file), the keys every algorithm takes (`algorithm.op | denominator | granularity | bucket |
// overlap | apply_to | every`), `workload:` and `compute:`. The specs below are what the loader reads with and what
// `aggsim list` prints.
#include <yaml-cpp/yaml.h>

#include <optional>
#include <string>
#include <vector>

#include "sim/scenario/scenario.hpp"
#include "sim/scenario/yaml_reader.hpp"

namespace aggsim {

// Rows a layer table may hold: hundreds of times the shipped tables (scenarios/models/: at most 157).
constexpr std::int64_t kMaxLayers = 65536;

// model.*: size, layers, batch, proxy_dim, math.
std::vector<ParamSpec> model_param_specs();
// algorithm.*, for every algorithm besides its own keys: op, denominator, granularity, bucket, overlap,
// apply_to, every.
std::vector<ParamSpec> common_algorithm_param_specs();

// The `model` mapping (absent: every default).
void read_model(const std::optional<YamlValue>& model, ModelSpec& spec, const std::string& scenario_file);
// The common keys, claimed from the `algorithm` mapping; `consensus` sets apply_to's default.
void read_common_algorithm_keys(YamlMap& alg, AlgorithmSpec& spec, bool consensus);
// Top-level `workload:` and `compute:`. Call after `model` and `ranks` are read.
void read_training(YamlMap& top, Scenario& sc);
// The math plane's memory: ranks x proxy_dim x 4 bytes, held 5 times over at a step's peak, must
// stay within math_memory_limit() (half the machine's physical memory), else an error at
// model.proxy_dim. Call after read_training.
void check_math_memory(const YamlMap& top, const Scenario& sc);
// The per-step records (the step log, the math log) grow as steps complete, at least
// 256 + 48 x ranks bytes a step: `steps` whose records cannot fit in the same limit are refused
// at the key (a replayed run reaches millions of steps a minute and was killed for memory).
void check_step_memory(const YamlMap& top, const Scenario& sc);
std::uint64_t math_memory_limit();

void emit_model_layers(YAML::Emitter& out, const ModelSpec& spec);
void emit_aggregation_scope(YAML::Emitter& out, const AlgorithmSpec& spec);
void emit_training(YAML::Emitter& out, const Scenario& sc);

}  // namespace aggsim
