#pragma once
// A calibration: what `aggsim calibrate` fits and any scenario uses with `calibration: cal.yaml`.
// It holds the network preset it was fitted under, the platform generator's link values it was
// fitted against, and latency/bandwidth factors piecewise in message size (as SimGrid's own SMPI
// calibration), one table for messages inside a node and one for messages between nodes.
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "algorithms/calibration_capability.hpp"
#include "sim/core/params.hpp"

namespace aggsim {

struct FactorStep {
  std::uint64_t from_bytes = 0;  // applies to messages of at least this size, up to the next step
  double latency = 1;            // multiplies the route's latency
  double bandwidth = 1;          // multiplies the route's bandwidth
};

struct FactorTable {
  std::vector<FactorStep> steps;  // increasing from_bytes, the first from 0; empty = factors of 1
  const FactorStep& at(double message_bytes) const;
  bool empty() const { return steps.empty(); }
};

struct Calibration {
  std::string file;                             // where it was read from (summary.json names it)
  std::string network;                          // preset it was fitted under: lv08 | alpha_beta
  std::map<std::string, std::string> platform;  // generator key -> value text (e.g. intra_bandwidth: 300GBps)
  Params platform_params;                       // the same, checked against the generator's specs
  FactorTable intra;                            // both ends on one node (same aggsim_node property)
  FactorTable inter;                            // everything else
  // The fitted parameters of an algorithm's own model (the model's section of the file), when fitted for
  // one; the factors then hold one bandwidth factor per link class (the share of a link's bandwidth
  // the model reaches).
  std::shared_ptr<const ModelParameters> model;
  std::vector<std::string> identified;  // model parameters the data identified (the rest: the model's own)
  // What the data covered: sizes (nccl-tests' size), and the algorithm/protocol pairs the model ran
  // ("ring/simple"); empty when the file does not say.
  std::uint64_t measured_min_bytes = 0, measured_max_bytes = 0;
  std::vector<std::string> observed_choices;
  // What it was fitted for (written by aggsim calibrate; empty in files written by hand or before):
  // the scenario's algorithm, the link classes the measured points crossed ("intra": two ranks on
  // one node, "inter": ranks on several nodes) and the fabric between nodes. Each with the
  // "file:line:col" it was read from, for messages.
  std::string algorithm, algorithm_where;
  std::vector<std::string> link_classes;
  std::string link_classes_where;
  std::string fabric, fabric_where;
  std::string model_where;  // of the model's section (ModelCalibration::section)

  // The factors of a transfer of `bytes` inside a node or between nodes (1 where no table).
  FactorStep factors(bool same_node, double bytes) const;
  // Whether it holds factor tables (else every factor is 1).
  bool has_factors() const { return !intra.empty() || !inter.empty(); }
};

// The models whose sections a calibration file may hold: every algorithm table entry's that fits
// its model's parameters (CalibrationCapability::model).
std::vector<const ModelCalibration*> table_models();

// Reads a calibration file; `generator_specs` (the scenario's topology parameters, or null for an
// XML platform, which takes no platform values) checks the platform block; each of `models` reads
// its own section. Errors carry file:line:col and the key path inside the calibration file.
Calibration load_calibration(const std::string& file, const std::vector<ParamSpec>* generator_specs,
                             const std::vector<const ModelCalibration*>& models = table_models());

// What a run receives of `cal` (AlgorithmConfig::calibration): its model parameters and its factor
// tables' bandwidth factors.
std::shared_ptr<const RunCalibration> run_calibration(const Calibration& cal);

// The file's text, with a comment header (what it was fitted from).
// The fitted model parameters go to the section of the model of `models` that writes them.
std::string calibration_yaml(const Calibration& cal, const std::string& comment,
                             const std::vector<const ModelCalibration*>& models = table_models());

}  // namespace aggsim
