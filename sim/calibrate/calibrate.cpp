#include "sim/calibrate/calibrate.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>

#include "sim/calibrate/factor_fit.hpp"
#include "sim/calibrate/model_fit.hpp"
#include "sim/calibrate/outliers.hpp"
#include "sim/calibrate/point_plan.hpp"
#include "sim/calibrate/point_runner.hpp"
#include "sim/core/error.hpp"
#include "sim/core/terminal.hpp"
#include "sim/output/temporary.hpp"
#include "sim/platform/topology.hpp"
#include "sim/scenario/calibration.hpp"
#include "sim/scenario/scenario_loader.hpp"

namespace aggsim {

namespace fs = std::filesystem;

std::vector<std::uint64_t> default_factor_edges() {
  return {4ull << 10, 64ull << 10, 1ull << 20, 16ull << 20};
}

std::vector<MeasurementFile> read_measurement_files(const MeasuredRunOptions& options) {
  std::vector<MeasurementFile> files;
  for (const auto& file : options.measurement_files) {
    MeasurementDefaults defaults = options.defaults;
    if (const auto shape = options.shapes.find(file); shape != options.shapes.end()) {
      defaults.ranks = shape->second.ranks;
      defaults.nodes = shape->second.nodes;
      defaults.shape_option = shape->second.option;
    }
    files.push_back(read_measurement_file(file, defaults));
    for (const auto& s : files.back().skipped)
      print_lines(stderr, "aggsim: warning: {}: skipped: {}\n", s.where, s.why);
    for (const auto& w : files.back().warnings)
      print_lines(stderr, "aggsim: warning: {}: {}\n", w.where, w.why);
  }
  return files;
}

std::vector<Measurement> read_all_measurements(const MeasuredRunOptions& options) {
  std::vector<Measurement> all;
  for (const auto& f : read_measurement_files(options)) all.insert(all.end(), f.rows.begin(), f.rows.end());
  return all;
}

void check_observed_choices(const Scenario& base, const std::vector<Measurement>& measured) {
  const std::optional<LoggedChoices>& choices = calibration_capability(base).logged_choices;
  if (!choices) return;
  std::vector<LoggedPoint> points;
  for (const auto& m : measured) points.push_back(logged_point(m));
  choices->check(points, plan_scenario(base), [](const std::string& line) { print_lines(stderr, "aggsim: {}\n", line); });
}

namespace {

// A point whose weight in a model's robust fit fell below this (more than about half the loss's
// scale off the fit) is listed; one at 0 (beyond the scale) was set aside.
constexpr double kFarOffWeight = 0.5;

// Simulated time of each measured point under the scenario plus `extra` overrides.
std::vector<double> simulate_points(const MeasuredRunOptions& options, const std::vector<PointPlan>& plans,
                                    const std::vector<std::string>& extra,
                                    std::vector<std::string>* choices = nullptr) {
  std::vector<std::vector<std::string>> sets;
  for (const auto& p : plans) {
    sets.push_back(options.overrides);
    sets.back().insert(sets.back().end(), p.sets.begin(), p.sets.end());
    sets.back().insert(sets.back().end(), extra.begin(), extra.end());
  }
  PointRunOptions run{options.exe, options.scenario, options.simgrid_args, options.jobs};
  std::vector<double> times = run_points(run, sets, choices);
  for (std::size_t i = 0; i < times.size(); ++i) times[i] /= plans[i].divisor;
  return times;
}

// The generator's link values the factors multiply (written into the calibration, so that a
// scenario with other values still gets the machine that was measured).
std::map<std::string, std::string> link_values(const Scenario& sc) {
  std::map<std::string, std::string> values;
  if (!sc.platform.generator) return values;
  for (const auto& spec : sc.platform.generator->params) {
    const bool link_key = spec.kind == ParamKind::bandwidth || spec.kind == ParamKind::duration;
    if (link_key && sc.platform.params.has(spec.key))
      values[spec.key] = format_param(spec, sc.platform.params.all().at(spec.key));
  }
  return values;
}

// A probe calibration the points read: a file in a temporary that proves it is aggsim's (removed
// when done, on an interruption too, and by a later batch after a SIGKILL).
struct TempFile {
  Temporary folder;
  fs::path path;
  explicit TempFile(const std::string& text)
      : folder(system_temporary_folder(), "aggsim-calibration"), path(folder.path() / "calibration.yaml") {
    write_new_file(path, text);
  }
};

std::string factor_lines(const FactorTable& t, const std::vector<int>& points) {
  std::string out =
      fmt::format("  {:>12} {:>12} {:>12} {:>7}\n", "from (B)", "latency x", "bandwidth x", "points");
  for (std::size_t s = 0; s < t.steps.size(); ++s)
    out += fmt::format("  {:>12} {:>12.4g} {:>12.4g} {:>7}\n", t.steps[s].from_bytes, t.steps[s].latency,
                       t.steps[s].bandwidth, s < points.size() ? points[s] : 0);
  return out;
}

// The points the fit set aside or counted less: those out of order in their run (weight 0), and
// those that ended far off the fit (a model's robust fit only: its weight below a half).
std::string outlier_text(const std::vector<Measurement>& measured, const std::vector<MonotonicOutlier>& outliers,
                         const std::vector<double>& weights, const std::vector<double>& simulated) {
  std::string text;
  std::size_t next = 0;
  for (std::size_t i = 0; i < measured.size(); ++i) {
    if (next < outliers.size() && outliers[next].index == i) {
      text += "- " + outlier_line(measured[i], outliers[next++].why) + ": treated as an outlier\n";
    } else if (i < weights.size() && weights[i] < kFarOffWeight) {
      text += fmt::format("- {}: {:+.0f} % off the fit: {}\n",
                          outlier_line(measured[i], fmt::format("simulated {:.4g} us", simulated[i] * 1e6)),
                          100 * (simulated[i] / measured[i].time_s - 1),
                          weights[i] > 0 ? fmt::format("down-weighted (weight {:.2f})", weights[i])
                                         : std::string("set aside (weight 0)"));
    }
  }
  return text.empty() ? "" : "points the fit set aside or counted less:\n" + text;
}

// What a level of per-step factors is fitted from: the points, their plans and prior weights.
struct FactorLevelInputs {
  const MeasuredRunOptions& options;
  const std::vector<Measurement>& measured;
  const std::vector<PointPlan>& plans;
  const std::vector<double>& prior;
  const std::vector<std::uint64_t>& edges;
};

// One level's per-step factors (inside nodes, or between them): probed once as is and once with the
// level's latencies doubled, the difference being the latency part (exact while the same flows stay
// critical); the next pass simulates the fitted factors: if that matches the fit's prediction the
// level is done (and those runs are its simulated times); if the factors changed which flow is
// slowest (an intra-node hop of a multi-node ring), it probes again around them. Points of prior
// weight 0 (outliers) are simulated but not fitted. Returns the level's part of the report.
std::string fit_factor_level(const FactorLevelInputs& in, bool inter, Calibration& cal,
                             std::vector<double>& simulated, std::string& notes) {
  const std::string level = inter ? "inter-node" : "intra-node";
  std::vector<std::size_t> idx;
  for (std::size_t i = 0; i < in.plans.size(); ++i)
    if (in.plans[i].inter_node == inter) idx.push_back(i);
  FactorTable& table = inter ? cal.inter : cal.intra;
  if (idx.empty()) {
    notes += fmt::format("- {} latency and bandwidth: no {} measurement; assumed the platform's values (factor 1)\n",
                         level, inter ? "multi-node" : "single-node");
    return "";
  }
  std::vector<PointPlan> level_plans;
  for (auto i : idx) level_plans.push_back(in.plans[i]);
  FactorFit fit;
  std::vector<double> predicted;
  for (int pass = 0;; ++pass) {
    const TempFile as_is(calibration_yaml(cal, "probe"));
    const auto t0 = simulate_points(in.options, level_plans, {"calibration=" + as_is.path.string()});
    double off = pass == 0 ? 1.0 : 0.0;
    for (std::size_t k = 0; k < predicted.size(); ++k) off = std::max(off, std::fabs(t0[k] / predicted[k] - 1));
    if (off < kFitTolerance || pass == kMaxFitPasses) {
      for (std::size_t k = 0; k < idx.size(); ++k) simulated[idx[k]] = t0[k];
      break;
    }
    Calibration doubled = cal;
    FactorTable& probe_table = inter ? doubled.inter : doubled.intra;
    if (probe_table.empty()) probe_table.steps = {{0, 1.0, 1.0}};
    for (auto& step : probe_table.steps) step.latency *= 2;
    const TempFile probe(calibration_yaml(doubled, "probe"));
    const auto t1 = simulate_points(in.options, level_plans, {"calibration=" + probe.path.string()});
    std::vector<ProbeRow> rows;
    for (std::size_t k = 0; k < idx.size(); ++k) {
      if (in.prior[idx[k]] <= 0) continue;
      const double lat = std::max(0.0, t1[k] - t0[k]);
      rows.push_back({in.plans[idx[k]].message_bytes, in.measured[idx[k]].time_s, lat, std::max(0.0, t0[k] - lat)});
    }
    fit = fit_factors(rows, in.edges, level);
    predicted.clear();
    for (std::size_t k = 0; k < idx.size(); ++k) {
      const double lat = std::max(0.0, t1[k] - t0[k]), bw = std::max(0.0, t0[k] - lat);
      const FactorStep& m = fit.table.at(in.plans[idx[k]].message_bytes);
      predicted.push_back(m.latency * lat + bw / m.bandwidth);
    }
    // The fit's factors multiply the ones probed with.
    for (auto& step : fit.table.steps) {
      const FactorStep before = table.empty() ? FactorStep{} : table.at(static_cast<double>(step.from_bytes));
      step.latency *= before.latency;
      step.bandwidth *= before.bandwidth;
    }
    table = fit.table;
  }
  for (const auto& n : fit.notes) notes += "- " + n + "\n";
  return fmt::format("{} factors (by message size; multiply the platform's latency and bandwidth):\n{}", level,
                     factor_lines(table, fit.points));
}

}  // namespace

void mark_calibration_coverage(const Scenario& sc, ComparedPoint& p) {
  if (!sc.calibration) return;
  const Calibration& cal = *sc.calibration;
  if (cal.measured_max_bytes > 0)
    p.in_measured_range =
        p.measured.bytes >= cal.measured_min_bytes && p.measured.bytes <= cal.measured_max_bytes;
  if (!cal.observed_choices.empty() && !p.choice.empty())
    p.choice_observed = std::find(cal.observed_choices.begin(), cal.observed_choices.end(), p.choice) !=
                        cal.observed_choices.end();
}

namespace {

// The scenario calibrate fits: a bare collective without a calibration of its own.
Scenario calibration_base(const MeasuredRunOptions& options) {
  Scenario base = load_scenario(options.scenario, options.overrides);
  print_dropped_keys(base);
  check_plain_collective(base, "calibrate");
  if (base.calibration)
    throw InputError(
        fmt::format("{}: calibration: the scenario already uses {}; calibrate a scenario without one",
                    base.where("calibration"), base.calibration->file));
  return base;
}

// Each point's plan, run as the log's NCCL ran it where the algorithm follows that; what the model
// cannot run is warned of once per file and choice.
std::vector<PointPlan> calibration_plans(const Scenario& base, const std::vector<Measurement>& measured) {
  std::vector<PointPlan> plans;
  std::set<std::string> missed_choices;
  for (const auto& m : measured) {
    plans.push_back(plan_point(base, m));
    const MissedChoice missed = follow_observed_choice(base, m, plans.back());
    const std::string file = m.source.substr(0, m.source.rfind(':'));
    if (!missed.what.empty() && missed_choices.insert(file + missed.what).second)
      print_lines(stderr, "aggsim: warning: {}: the model cannot run {}\n", missed.where, missed.what);
  }
  return plans;
}

// What the fit is for and what its points crossed, checked where the calibration is used: the
// generator's link values, the algorithm, link classes, fabric and the sizes measured.
void record_fitted_for(const Scenario& base, const std::vector<Measurement>& measured, Calibration& cal) {
  cal.platform = link_values(base);
  cal.algorithm = base.algorithm.name;
  bool intra = false, inter = false;
  for (const auto& m : measured) {
    intra = intra || m.ranks > m.nodes;
    inter = inter || m.nodes > 1;
  }
  if (intra) cal.link_classes.push_back("intra");
  if (inter) cal.link_classes.push_back("inter");
  if (inter) cal.fabric = fabric_name(base.platform.fabric);
  for (const auto& m : measured) {
    cal.measured_min_bytes =
        cal.measured_min_bytes == 0 ? m.bytes : std::min(cal.measured_min_bytes, m.bytes);
    cal.measured_max_bytes = std::max(cal.measured_max_bytes, m.bytes);
  }
}

// What the fit found: the report's factors or parameters, what the data did not identify (factor
// steps), and each point's simulated time under the final calibration, choice and weight.
struct FitOutcome {
  std::string factors_text;
  std::string notes;
  std::vector<double> simulated;
  ModelFitOutcome model;  // empty for factor steps
};

// The model's parameters where the algorithm's capability fits them; else per-step factors, inside
// a node first (single-node points), then between nodes with those intra-node factors in place: a
// multi-node ring's time also holds its intra-node hops. Single-node points never cross nodes, so
// the inter-node factors cannot change their simulated times.
FitOutcome fit_calibration(const MeasuredRunOptions& options, const Scenario& base,
                           const std::vector<Measurement>& measured, const std::vector<PointPlan>& plans,
                           const std::vector<double>& prior, const std::vector<std::uint64_t>& edges,
                           Calibration& cal) {
  FitOutcome out;
  out.simulated.assign(plans.size(), 0.0);
  if (const auto& model = calibration_capability(base).model) {
    const CalibrationSimulator simulate = [&](const Calibration& probe, std::vector<std::string>* choices) {
      const TempFile file(calibration_yaml(probe, "probe"));
      return simulate_points(options, plans, {"calibration=" + file.path.string()}, choices);
    };
    out.model = fit_model_parameters({measured, plans, prior, *model, simulate}, cal, out.simulated);
    out.factors_text = out.model.text;
    return out;
  }
  for (const bool inter : {false, true})
    out.factors_text +=
        fit_factor_level({options, measured, plans, prior, edges}, inter, cal, out.simulated, out.notes);
  return out;
}

// The report: points and errors, the factors or parameters, the points set aside, the platform
// values the factors multiply and what was not identified.
std::string calibration_report(const MeasuredRunOptions& options, const Calibration& cal, bool factor_steps,
                               const FitOutcome& fit, const std::vector<Measurement>& measured,
                               const std::vector<MonotonicOutlier>& outliers,
                               const std::vector<ComparedPoint>& points, const std::string& files) {
  std::string platform_text;
  for (const auto& [k, v] : cal.platform)
    platform_text += fmt::format("{}{}: {}", platform_text.empty() ? "" : ", ", k, v);
  std::string report =
      fmt::format("calibration of {} (network {}) on {} measured points from {}\n{}\n{}", options.scenario,
                  cal.network, measured.size(), files, comparison_table(points), fit.factors_text);
  report += outlier_text(measured, outliers, fit.model.weights, fit.simulated);
  if (!platform_text.empty()) report += fmt::format("platform values the factors multiply: {}\n", platform_text);
  if (factor_steps)
    report += fit.notes.empty() ? "every parameter was identified by the data\n"
                                : "not identified by the data:\n" + fit.notes;
  return report;
}

}  // namespace

CalibrationResult calibrate(const MeasuredRunOptions& options, const std::vector<std::uint64_t>& edges) {
  const Scenario base = calibration_base(options);
  const std::vector<Measurement> measured = read_all_measurements(options);
  check_observed_choices(base, measured);
  const std::vector<PointPlan> plans = calibration_plans(base, measured);
  // Points out of order in their run are artefacts of the measurement: no fit follows them.
  const std::vector<MonotonicOutlier> outliers = monotonic_outliers(measured);
  std::vector<double> prior(measured.size(), 1.0);
  for (const auto& o : outliers) prior[o.index] = 0;

  Calibration cal;
  cal.network = network_preset_name(base.network);
  if (cal.network == "ns3")
    throw InputError(fmt::format("{}: network ns3 takes no calibration factors", base.source_file));
  const FitOutcome fit = fit_calibration(options, base, measured, plans, prior, edges, cal);
  record_fitted_for(base, measured, cal);

  // Every point as simulated with the final factors (not the fit's linear prediction).
  CalibrationResult result;
  for (std::size_t i = 0; i < measured.size(); ++i) {
    ComparedPoint p;
    p.measured = measured[i];
    p.simulated_s = fit.simulated[i];
    if (i < fit.model.choices.size()) p.choice = fit.model.choices[i];
    result.points.push_back(p);
  }
  std::string files;
  for (const auto& f : options.measurement_files) files += (files.empty() ? "" : ", ") + f;
  const bool factor_steps = !calibration_capability(base).model;
  result.report = calibration_report(options, cal, factor_steps, fit, measured, outliers, result.points, files);
  result.calibration_yaml = calibration_yaml(
      cal,
      fmt::format(
          "aggsim calibration of {} from {}\n(written by aggsim calibrate; geometric-mean error {:.1f} % "
          "over {} points)",
          options.scenario, files, 100 * geometric_mean_error(result.points), measured.size()));
  return result;
}

std::vector<ComparedPoint> compare(const MeasuredRunOptions& options) {
  const Scenario base = load_scenario(options.scenario, options.overrides);
  print_dropped_keys(base);
  check_plain_collective(base, "compare");
  const std::vector<Measurement> measured = read_all_measurements(options);
  check_observed_choices(base, measured);
  std::vector<PointPlan> plans;
  for (const auto& m : measured) {
    plans.push_back(plan_point(base, m));
    follow_observed_choice(base, m, plans.back(), /*observed_too=*/false);
  }
  std::vector<std::string> choices;
  const auto simulated = simulate_points(options, plans, {}, &choices);
  std::vector<ComparedPoint> points;
  for (std::size_t i = 0; i < measured.size(); ++i) {
    ComparedPoint p{measured[i], simulated[i], choices[i]};
    mark_calibration_coverage(base, p);
    points.push_back(p);
  }
  return points;
}

}  // namespace aggsim
