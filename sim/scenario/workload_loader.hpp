#pragma once
// Reading and writing back the training-related parts of a scenario: `model.layers` (a layer table
// file), `algorithm.granularity | bucket | apply_to`, `workload:` and `compute:`.
#include <yaml-cpp/yaml.h>

#include "sim/scenario/scenario.hpp"
#include "sim/scenario/yaml_reader.hpp"

namespace aggsim {

// model.layers: FILE and model.batch, claimed from the `model` mapping.
void read_model_layers(YamlMap& model, ModelSpec& spec, const std::string& scenario_file);
// granularity, bucket, apply_to, claimed from the `algorithm` mapping; `consensus` sets apply_to's default.
void read_aggregation_scope(YamlMap& alg, AlgorithmSpec& spec, bool consensus);
// Top-level `workload:` and `compute:`. Call after `model` and `ranks` are read.
void read_training(YamlMap& top, Scenario& sc);

void emit_model_layers(YAML::Emitter& out, const ModelSpec& spec);
void emit_aggregation_scope(YAML::Emitter& out, const AlgorithmSpec& spec);
void emit_training(YAML::Emitter& out, const Scenario& sc);

}  // namespace aggsim
