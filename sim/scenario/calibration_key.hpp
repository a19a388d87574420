#pragma once
// The scenario's top-level `calibration: cal.yaml` key (path relative to the working directory,
// else to the scenario's folder, like platform files): loads the calibration, replaces the
// generator's link values with the calibrated ones and selects the network preset it was fitted
// under.
#include "sim/scenario/scenario.hpp"
#include "sim/scenario/yaml_reader.hpp"

namespace aggsim {

// `network_given`: the scenario names its network preset; a different one than the calibration's
// is an error (the factors only hold under the model they were fitted with).
void read_calibration_key(const YamlValue& value, Scenario& sc, bool network_given);

// Once the algorithm is known: a calibration of a model's parameters (an `nccl:` section, or fitted
// for an algorithm whose entry fits them) used by an algorithm whose runs do not read them, or
// per-size-step factors fitted for another algorithm used by one that fits its model's parameters,
// is an input error at the scenario's `calibration` key: those numbers would mean nothing there
// (CalibrationCapability, algorithms/calibration_capability.hpp).
void check_calibration_family(const Scenario& sc);

}  // namespace aggsim
