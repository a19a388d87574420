#pragma once
// `aggsim calibrate` and `aggsim compare`: the scenario at every measured point, one child process
// per simulation (see point_runner.hpp).
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "sim/calibrate/comparison.hpp"
#include "sim/calibrate/measurement.hpp"
#include "sim/scenario/scenario.hpp"

namespace aggsim {

// --shape FILE=RANKSxNODES: the ranks and nodes of one measurement file.
struct MeasurementShape {
  int ranks = 0;
  int nodes = 0;
  std::string option;  // as given, for messages: "--shape one.log=8x1"
};

struct MeasuredRunOptions {
  std::string scenario;
  std::vector<std::string> measurement_files;
  std::vector<std::string> overrides;              // --set key=value for the scenario (and every child)
  MeasurementDefaults defaults;                    // --ranks, --nodes, --collective: for logs that do not say
  std::map<std::string, MeasurementShape> shapes;  // --shape, by measurement file as given
  std::vector<std::string> simgrid_args;           // passed to every child
  std::string exe;                                 // the aggsim binary
  int jobs = 1;
};

struct CalibrationResult {
  std::string calibration_yaml;       // the calibration file's text
  std::string report;                 // points, errors, factors, what was not identified
  std::vector<ComparedPoint> points;  // every measured point with the calibrated simulation
};

// Default step boundaries of the piecewise factors (per-message sizes): 4KiB, 64KiB, 1MiB, 16MiB.
std::vector<std::uint64_t> default_factor_edges();

// Reads every file with its own defaults (--shape's ranks and nodes where given), reporting
// skipped lines and warnings on stderr.
std::vector<MeasurementFile> read_measurement_files(const MeasuredRunOptions& options);
// Their rows, in file order.
std::vector<Measurement> read_all_measurements(const MeasuredRunOptions& options);

// A log whose NCCL tuning lines, or NCCL_ALGO / NCCL_PROTO settings, name another algorithm or
// protocol than the scenario forces (nccl_allreduce with nccl_algorithm or protocol not auto) is an
// input error at that line. With nccl_allreduce, warns of the log's NCCL settings the model does
// not follow (Measurement::env).
void check_observed_choices(const Scenario& base, const std::vector<Measurement>& measured);

CalibrationResult calibrate(const MeasuredRunOptions& options, const std::vector<std::uint64_t>& edges);

// Marks whether the point's size and NCCL choice lie inside what the scenario's calibration was
// fitted on (ComparedPoint::in_measured_range, choice_observed); nothing without a calibration.
struct Scenario;
void mark_calibration_coverage(const Scenario& sc, ComparedPoint& p);

// The scenario as it is (with its calibration, if any) at every measured point.
std::vector<ComparedPoint> compare(const MeasuredRunOptions& options);

}  // namespace aggsim
