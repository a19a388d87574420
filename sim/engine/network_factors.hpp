#pragma once
// Applies a calibration's piecewise factors to SimGrid's network model through its factor
// callbacks (NetworkModelIntf), choosing the intra- or inter-node table by whether both hosts carry
// the same aggsim_node property.
#include <simgrid/s4u/Engine.hpp>

#include "sim/scenario/calibration.hpp"

namespace aggsim {

// Call once the platform is loaded and before the simulation runs; a calibration without factors
// leaves the network model's own factors in place. The calibration must outlive the run.
void install_network_factors(simgrid::s4u::Engine& engine, const Calibration& cal);

}  // namespace aggsim
