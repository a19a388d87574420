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

#include "sim/api/collective_call.hpp"
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

// The factors a calibration's tables give a transfer: they multiply its route's latency and bandwidth.
struct LinkFactors {
  double latency = 1, bandwidth = 1;
};

// What a run receives of the scenario's calibration (one handle in AlgorithmConfig): the algorithm,
// the network's factor callbacks, the run's warnings and its report all read it here.
struct RunCalibration {
  std::string file;                              // where it was read from (summary.json names it)
  // The factor tables: a transfer of `bytes` inside a node or between nodes (empty: no tables).
  std::function<LinkFactors(bool same_node, double bytes)> link_factors;
  BandwidthFactor bandwidth_factor;              // their bandwidth part (empty: none)
  std::shared_ptr<const ModelParameters> model;  // fitted model parameters (null: the model's own)
  // What the data covered: sizes (nccl-tests' size; max 0: unknown) and the algorithm/protocol
  // pairs the model ran on them ("ring/simple"; empty: unknown).
  std::uint64_t measured_min_bytes = 0, measured_max_bytes = 0;
  std::vector<std::string> observed_choices;
  // Where it was fitted: the link classes the points crossed ("intra", "inter"; empty: unknown)
  // and the fabric between nodes, each with the "file:line:col" it was read from.
  std::vector<std::string> link_classes;
  std::string link_classes_where;
  std::string fabric, fabric_where;

  bool has_factors() const { return static_cast<bool>(link_factors); }
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

// One mapping of a calibration file's model section, as the model reads it (the scenario layer reads
// the YAML): each get checks its value and fails naming the file, line and key; finish() refuses
// the keys nobody asked for.
struct SectionReader {
  virtual ~SectionReader() = default;
  virtual std::unique_ptr<SectionReader> map(const std::string& key) = 0;  // null: absent
  virtual std::optional<double> real(const std::string& key, double low, double high) = 0;
  // A list of words; `what` says what they must be, in the message when they are not a list.
  virtual std::optional<std::vector<std::string>> words(const std::string& key, const std::string& what) = 0;
  virtual void finish() = 0;
};

// Writes one model section: nested mappings (flow: on one line), numbers of six significant digits
// and lists of words.
struct SectionWriter {
  virtual ~SectionWriter() = default;
  virtual void begin_map(const std::string& key, bool flow) = 0;
  virtual void end_map() = 0;
  virtual void number(const std::string& key, double value) = 0;
  virtual void words(const std::string& key, const std::vector<std::string>& values) = 0;
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
  // The calibration file's section of the fitted parameters ("nccl"), read into the parameters
  // (with the names of those the data identified) and written from them; write_section returns
  // false for parameters of another model.
  std::string section;
  std::function<std::shared_ptr<const ModelParameters>(SectionReader& section, std::vector<std::string>& identified)>
      read_section;
  std::function<bool(SectionWriter& out, const ModelParameters& parameters, const std::vector<std::string>& identified)>
      write_section;
};

// What a measured point's log says of its calls, for an algorithm that follows logged choices.
struct LoggedPoint {
  std::string collective;  // all_reduce, ... (as --collective names it)
  int ranks = 0, nodes = 0;
  std::uint64_t bytes = 0;
  std::string source;           // "file:line" of the row
  CollectiveChoice observed;    // what ran, from the log's per-call tuning lines (empty: not said)
  std::string observed_source;  // "file:line" of the first of them
  int init_channels = 0;        // the communicator's channels from the log's init lines (0: not said)
  // What the log's settings told the library to run: one algorithm, one protocol (empty: free),
  // channel bounds (0: none), each with the "file:line" that states it, and the settings the
  // simulation does not follow ("NAME=VALUE (why)").
  std::string forced_algorithm, forced_algorithm_where;
  std::string forced_protocol, forced_protocol_where;
  int min_channels = 0, max_channels = 0;
  std::string channels_where;
  std::vector<std::pair<std::string, std::string>> not_followed;
};

// The scenario as a point plan sees it.
struct PlanScenario {
  const Params& algorithm_params;
  bool may_have_switch = false;  // some node may have GPUs on a switch that reduces
  std::string platform_gpu;      // the platform's GPU generation ("hopper"; empty: not said)
  std::string platform_where;    // "file:line:col" of the platform (and its XML file)
  // "file:line:col" of an algorithm key, for messages.
  std::function<std::string(const std::string& key)> where;
};

// What of a logged choice the model cannot run (empty `what` when it runs all of it).
struct MissedChoice {
  std::string what;
  std::string where;  // "file:line" of the line that names it
};

// How an algorithm that models a library's own choices runs each measured point as its log says.
struct LoggedChoices {
  // The --set overrides that run `point` as the log's tuning lines say it ran (`observed_too`; else
  // only as its settings told it to); what cannot run is returned. Throws InputError at the line.
  std::function<MissedChoice(const LoggedPoint& point, const PlanScenario& scenario, bool observed_too,
                             std::vector<std::string>& sets)>
      follow;
  // Says ("note: ...", "warning: ...", each once) what the logs' settings make the points run; throws
  // InputError where the scenario forces what a log contradicts.
  std::function<void(const std::vector<LoggedPoint>& points, const PlanScenario& scenario,
                     const std::function<void(const std::string& line)>& say)>
      check;
};

struct CalibrationCapability {
  // Empty: factor steps. Set: the model's parameters are fitted instead.
  std::optional<ModelCalibration> model;
  // Set when a measured point runs as the log's library ran it (its tuning lines, its algorithm and
  // protocol settings, channels): the algorithm models that library's own choices.
  std::optional<LoggedChoices> logged_choices;
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
