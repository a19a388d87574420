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

}  // namespace aggsim
