#pragma once
// The fit of a model's physical parameters (CalibrationCapability::model), the same for every
// algorithm that declares one: the model says what its parameters are, which can matter, what
// they put in place and how they are fitted; this runs the probes and passes.
#include <functional>
#include <string>
#include <vector>

#include "algorithms/calibration_capability.hpp"
#include "sim/calibrate/measurement.hpp"
#include "sim/calibrate/point_plan.hpp"
#include "sim/scenario/calibration.hpp"

namespace aggsim {

// Probe-and-fit passes at most; the run after a pass confirms it unless the critical flows changed.
inline constexpr int kMaxFitPasses = 3;
inline constexpr double kFitTolerance = 1e-2;  // simulated vs the fit's linear prediction

// Each point's simulated time under `cal`, and, when `choices` is set, what each ran (NCCL's
// "ring/simple"; empty where the run names none).
using CalibrationSimulator =
    std::function<std::vector<double>(const Calibration& cal, std::vector<std::string>* choices)>;

// What a fit of a model's parameters works on: the points, their plans and prior weights (0: an
// outlier the fit leaves out), the model, and how a point is simulated.
struct ModelFitInputs {
  const std::vector<Measurement>& measured;
  const std::vector<PointPlan>& plans;
  const std::vector<double>& prior;
  const ModelCalibration& model;
  CalibrationSimulator simulate;
};

// What fit_model_parameters found, for the report.
struct ModelFitOutcome {
  std::string text;                  // the parameters, what was not identified, what sits at a bound
  std::vector<std::string> choices;  // each point's choice as last simulated
  std::vector<double> weights;       // each point's weight in the fit
};

// A model's parameters (CalibrationCapability::model), probed around the current values and
// fitted (points of prior weight 0 left out), then simulated; again around the fit while the
// simulation and the fit's linear prediction differ by more than kFitTolerance.
// `cal` ends with the fitted parameters, what they identified and the choices seen; `simulated`
// with each point's time under them.
ModelFitOutcome fit_model_parameters(const ModelFitInputs& in, Calibration& cal, std::vector<double>& simulated);

}  // namespace aggsim
