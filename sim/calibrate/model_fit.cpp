#include "sim/calibrate/model_fit.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "sim/core/terminal.hpp"

namespace aggsim {

namespace {

// `choices` sorted, each once, without the empty one when `drop_empty`.
std::vector<std::string> distinct(std::vector<std::string> choices, bool drop_empty) {
  std::sort(choices.begin(), choices.end());
  choices.erase(std::unique(choices.begin(), choices.end()), choices.end());
  if (drop_empty) choices.erase(std::remove(choices.begin(), choices.end(), std::string()), choices.end());
  return choices;
}

// The calibration the values describe: the model's parameters and one bandwidth factor per link class.
void apply_model(const ModelCalibration& model, const std::vector<double>& values, Calibration& cal) {
  const AppliedModel applied = model.apply(values);
  cal.model = applied.model;
  cal.intra.steps = {{0, 1.0, applied.intra_bandwidth}};
  cal.inter.steps = {{0, 1.0, applied.inter_bandwidth}};
}

// One pass's probes: every point simulated with each parameter that can matter for the choices
// seen doubled. Returns the fit of this pass around `x`.
ModelFit probe_and_fit(const ModelFitInputs& in, const std::vector<double>& x, const Calibration& cal,
                       const std::vector<std::string>& choices, const std::vector<double>& simulated) {
  bool any_inter = false, any_intra = false;
  for (const auto& p : in.plans) (p.inter_node ? any_inter : any_intra) = true;
  const std::vector<std::string> seen = distinct(choices, false);
  std::vector<std::size_t> candidates;
  std::vector<std::vector<double>> probes;
  for (std::size_t k = 0; k < x.size(); ++k) {
    if (!in.model.relevant(k, seen, any_inter, any_intra)) continue;
    std::vector<double> doubled = x;
    doubled[k] *= 2;
    Calibration probe_cal = cal;
    apply_model(in.model, doubled, probe_cal);
    candidates.push_back(k);
    probes.push_back(in.simulate(probe_cal, nullptr));
  }
  std::vector<double> times(in.measured.size());
  for (std::size_t i = 0; i < in.measured.size(); ++i) times[i] = in.measured[i].time_s;
  return in.model.fit(times, simulated, x, candidates, probes, in.prior);
}

// The report's lines on the fitted parameters: each with the model's own value, what the data did
// not identify, and what sits at a bound (also warned of on stderr).
std::string model_report(const ModelCalibration& model, const ModelFit& fit, const std::vector<double>& x) {
  const auto has = [](const std::vector<std::size_t>& v, std::size_t k) {
    return std::find(v.begin(), v.end(), k) != v.end();
  };
  std::string text = model.report_title + "\n";
  for (std::size_t k = 0; k < model.names.size(); ++k)
    text += fmt::format("  {:<28} {:>10.4g} ({}: {:.4g}) {}\n", model.names[k], x[k], model.defaults_are,
                        model.defaults[k],
                        has(fit.at_bound, k)     ? "fitted, at a bound"
                        : has(fit.identified, k) ? "fitted"
                                                 : "assumed");
  std::string notes, bound;
  for (const auto& note : fit.notes) notes += "- " + note.second + "\n";
  for (std::size_t k : fit.at_bound) {
    bound += fmt::format("- {}: {:.4g}; the points that run on it carry it to every prediction\n", model.names[k],
                         x[k]);
    print_lines(
        stderr,
        "aggsim: warning: {} is held at a bound of the model ({:.4g}): the measurements ask for more "
        "than it allows, most likely points the model runs otherwise than {} did (see the report)\n",
        model.names[k], x[k], model.defaults_are);
  }
  return text + (notes.empty() ? "" : "not identified by the data:\n" + notes) +
         (bound.empty() ? "" : "held at a bound of the model (the data ask for more than it allows):\n" + bound);
}

}  // namespace

ModelFitOutcome fit_model_parameters(const ModelFitInputs& in, Calibration& cal, std::vector<double>& simulated) {
  std::vector<double> x = in.model.defaults;
  ModelFit fit;
  std::vector<std::string> choices;
  for (int pass = 0;; ++pass) {
    apply_model(in.model, x, cal);
    simulated = in.simulate(cal, &choices);
    double off = pass == 0 ? 1.0 : 0.0;
    for (std::size_t i = 0; i < fit.predicted.size(); ++i)
      off = std::max(off, std::fabs(simulated[i] / fit.predicted[i] - 1));
    if (off < kFitTolerance || pass == kMaxFitPasses) break;
    const ModelFit pass_fit = probe_and_fit(in, x, cal, choices, simulated);
    fit = pass == 0 ? pass_fit : in.model.merge(fit, pass_fit);
    x = fit.values;
  }
  // What the data covered, for compare's in_measured_range and choice_observed.
  cal.identified.clear();
  for (std::size_t k : fit.identified) cal.identified.push_back(in.model.names[k]);
  cal.observed_choices = distinct(choices, true);
  ModelFitOutcome outcome;
  outcome.text = model_report(in.model, fit, x);
  outcome.choices = choices;
  outcome.weights = fit.weights.empty() ? in.prior : fit.weights;
  return outcome;
}

}  // namespace aggsim
