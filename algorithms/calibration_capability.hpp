#pragma once
// How an algorithm is calibrated and what its runs receive of a calibration, declared in its table
// entry (AlgorithmInfo::calibration): `aggsim calibrate`, the point plans and the scenario's checks
// read the entry, so that a new calibratable algorithm is one entry. Two ways:
//  - factor steps (message-level algorithms): latency and bandwidth factors of the links, piecewise
//    in message size, fitted by probing the links (sim/calibrate/factor_fit.hpp);
//  - model parameters (NCCL's model): a few physical parameters of the algorithm's own model, each
//    a latency or an inverse bandwidth, so that a point's time is linear in them while the same
//    streams stay critical (algorithms/nccl/calibration/nccl_fit.hpp).
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sim/core/params.hpp"

namespace aggsim {

// The factor the network applies to the bandwidth of a transfer of `bytes` inside a node or between
// nodes (a calibration's factor tables; none: 1). A movement that paces its own streams by the
// links' rates paces them at the rates the transfers get.
using BandwidthFactor = std::function<double(bool same_node, double bytes)>;

// The fitted parameters of an algorithm's own model (NCCL's protocol costs): only the model that
// fitted them reads inside.
struct ModelParameters {
  virtual ~ModelParameters() = default;
  virtual bool same_as(const ModelParameters& other) const = 0;
  // What they are, for messages ("NCCL's network costs").
  virtual std::string what() const = 0;
};

// What a run receives of the scenario's calibration (one handle in AlgorithmConfig).
struct RunCalibration {
  BandwidthFactor bandwidth_factor;              // the factor tables (empty: none)
  std::shared_ptr<const ModelParameters> model;  // fitted model parameters (null: the model's own)
};

// How one measured collective of `bytes` (nccl-tests' size) on `ranks` ranks is simulated.
struct CollectivePlan {
  std::vector<std::string> sets;  // --set key=value choosing what runs (the algorithm, its collective)
  std::uint64_t model_bytes = 0;  // the run's model.size
  double divisor = 1;             // the measured operation is this fraction of the simulated run
  double message_bytes = 0;       // size of the messages the ranks exchange (picks the factor step)
};

// The result of a fit of model parameters, by the parameters' indices in ModelCalibration::names.
struct ModelFit {
  std::vector<double> values;
  std::vector<std::size_t> identified;              // fitted; the other candidates kept their values
  std::vector<std::pair<std::size_t, std::string>> notes;  // a candidate not identified, and why
  std::vector<std::size_t> at_bound;                // fitted, held at a bound of the model
  std::vector<double> predicted;                    // each point's time under the fit's linear model
  std::vector<double> weights;                      // each point's weight in the fit
};

// What a calibration of model parameters puts in place: the parameters and one bandwidth factor
// per link class (the share of a link's bandwidth the model reaches; 1: all of it).
struct AppliedModel {
  std::shared_ptr<const ModelParameters> model;
  double intra_bandwidth = 1, inter_bandwidth = 1;
};

// A model whose physical parameters calibrate fits: probes each relevant one at twice its value,
// fits, and simulates again around the fit until the simulation matches its linear prediction.
struct ModelCalibration {
  std::vector<std::string> names;  // of the parameters, as the report and the file name them
  std::vector<double> defaults;    // the model's own values
  // Whether parameter k can matter for points that ran these choices ("ring/ll128") and cross
  // nodes (any_inter) or not (any_intra).
  std::function<bool(std::size_t k, const std::vector<std::string>& choices, bool any_inter, bool any_intra)>
      relevant;
  std::function<AppliedModel(const std::vector<double>& values)> apply;
  // `measured[i]` point i's measured time, `at[i]` its simulated time at x0, `probe[k][i]` with
  // candidate k at twice its x0 value, `weight[i]` its prior weight (0: an outlier).
  std::function<ModelFit(const std::vector<double>& measured, const std::vector<double>& at,
                         const std::vector<double>& x0, const std::vector<std::size_t>& candidates,
                         const std::vector<std::vector<double>>& probe, const std::vector<double>& weight)>
      fit;
  // A fit in passes, each around the last one's values: `later`'s values, what any pass fitted.
  std::function<ModelFit(const ModelFit& earlier, const ModelFit& later)> merge;
  std::string report_title;  // heads the parameters in the report
  std::string defaults_are;  // whose the model's own values are, in the report ("NCCL")
  // What the fitted numbers are, and what the model does itself that factors would fold in, for
  // the checks of a scenario's calibration.
  std::string numbers_are;
  std::string models_itself;
};

struct CalibrationCapability {
  // Empty: factor steps. Set: the model's parameters are fitted instead.
  std::optional<ModelCalibration> model;
  // True when a measured point runs as the log's NCCL ran it (its tuning lines, NCCL_ALGO /
  // NCCL_PROTO, channels): the algorithm models NCCL's own choices.
  bool follows_logged_choices = false;
  // How a measured collective is simulated; may throw InputError naming `source` (the
  // measurement's file:line). Default: message_level_plan.
  std::function<CollectivePlan(const std::string& collective, int ranks, std::uint64_t bytes,
                               const std::string& source)>
      plan;
  // Whether the algorithm's runs, under these parameters, read fitted model parameters (a
  // calibration of model parameters then applies to them); empty: only when it fits them itself.
  std::function<bool(const Params&)> reads_model_parameters = {};
};

// Factor steps, with message_level_plan.
CalibrationCapability factor_step_calibration();

// all_reduce runs the scenario's algorithm on `bytes`; all_gather runs `allgather` on bytes/ranks
// per rank; reduce_scatter is half a ring all-reduce (its first p-1 steps); sendrecv is one step of
// a ring all-gather (all ranks send `bytes` to the next at once); broadcast has no simulation.
CollectivePlan message_level_plan(const std::string& collective, int ranks, std::uint64_t bytes,
                                  const std::string& source);

// Whether two runs receive the same calibration (the same model parameters; the factor tables
// come with them from the same file).
bool same_calibration(const std::shared_ptr<const RunCalibration>& a, const std::shared_ptr<const RunCalibration>& b);

}  // namespace aggsim
