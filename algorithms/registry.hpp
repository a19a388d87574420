#pragma once
// One explicit name -> entry table per kind. Adding an algorithm: one file defining its
// `*_entry()` function, one declaration and one row in registry.cpp, one test.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "algorithms/calibration_capability.hpp"
#include "algorithms/compression/compressor.hpp"
#include "algorithms/memory/memory.hpp"
#include "sim/api/aggregator.hpp"
#include "sim/api/collective_call.hpp"
#include "sim/core/params.hpp"

namespace aggsim {

struct AlgorithmInfo;
struct CompressorInfo;

// Everything an algorithm's prepare stage needs, already parsed and checked one key at a time.
struct AlgorithmConfig {
  const AlgorithmInfo* algorithm = nullptr;  // the scenario's algorithm
  ReduceOp op;
  Params params;  // the algorithm's own parameters (its ParamSpecs)
  int world = 1;
  // What the run receives of the scenario's calibration (null: none); only the model that fitted
  // its parameters reads inside them (NCCL's protocol costs: protocol_costs_of).
  std::shared_ptr<const RunCalibration> calibration;
  // The calibration's factor tables, for movements that pace their own streams (empty: none).
  BandwidthFactor bandwidth_factor() const { return calibration ? calibration->bandwidth_factor : BandwidthFactor{}; }
  bool math = true;        // the math plane runs (model.math)
  // The model's dense fp32 bytes (model.size, or its layers' sum): no call of a step moves more.
  // A size the algorithm cannot simulate is a ParamError with key "model.size".
  std::uint64_t model_bytes = 0;
  std::uint64_t seed = 0;  // the scenario seed (e.g. for a random graph every rank must agree on)
  const CompressorInfo* compressor = nullptr;  // the scenario's compressor (`none` when absent)
  Params compressor_params;

  using MergedFlowsRefusal = std::function<std::string(const std::vector<std::vector<int>>& nodes)>;
  // The platform, null while the scenario loads (it is not built yet): the checks that need it run
  // again when the run is prepared on it. A prepare stage that reads any of these depends on the
  // platform (reads_platform()); one that reads none is prepared once, when the scenario loads,
  // and the run takes that (sim/engine/simulation.cpp). Aggregators get the platform from their
  // RankContext, never from a config they captured.
  // Which ranks share a node.
  const RankLayout* layout() const {
    platform_read_ = true;
    return layout_;
  }
  // Each rank's host (rank r on (*hosts())[r]).
  const std::vector<sg4::Host*>* hosts() const {
    platform_read_ = true;
    return hosts_;
  }
  // Why, with `nodes` the ranks of each node (in ring order), one flow from each node's first rank
  // to the next node's would not take the time of one flow from each of the node's ranks to the
  // rank of the same local index there ("" when it would: sim/engine/merged_flows.hpp).
  const MergedFlowsRefusal& merged_node_flows_refusal() const {
    platform_read_ = true;
    return merged_node_flows_refusal_;
  }
  void set_platform(const RankLayout* layout, const std::vector<sg4::Host*>* hosts, MergedFlowsRefusal refusal) {
    layout_ = layout;
    hosts_ = hosts;
    merged_node_flows_refusal_ = std::move(refusal);
  }
  bool reads_platform() const { return platform_read_; }

  // A new compressor as the scenario configures it (each rank owns its own).
  std::unique_ptr<Compressor> make_compressor() const;

 private:
  const RankLayout* layout_ = nullptr;
  const std::vector<sg4::Host*>* hosts_ = nullptr;
  MergedFlowsRefusal merged_node_flows_refusal_ = {};
  mutable bool platform_read_ = false;  // set by the accessors above
};

// Whether two configurations give the same prepare stage, the platform aside: the same algorithm,
// op, parameters, ranks, calibrated model parameters, math, seed and compressor.
bool same_inputs(const AlgorithmConfig& a, const AlgorithmConfig& b);

// An extra figure an algorithm reports in summary.json (e.g. a graph's spectral gap); NaN is
// written as null. A field may instead hold a text, or an object of named figures (in order).
struct SummaryField {
  std::string key;
  double value = 0;
  std::optional<std::string> text = {};
  std::optional<std::vector<std::pair<std::string, double>>> object = {};
};

// Host names the first ranks run on, in rank order (e.g. a parameter server's servers); the other
// ranks take the remaining hosts in natural order. `key` is the parameter they come from.
struct RankPlacement {
  std::string key;
  std::vector<std::string> first_hosts;
};

// What an algorithm's prepare stage makes of one run: the structure every rank shares (a graph, a
// gossip layout), captured by `make_aggregator`, and the figures it reports.
struct AlgorithmRun {
  // One rank's aggregator (called once per rank and bucket).
  std::function<std::unique_ptr<Aggregator>()> make_aggregator;
  // Optional: extra fields for summary.json, asked for once, after the simulation (so they may
  // report what the run observed).
  std::function<std::vector<SummaryField>()> summary_fields = {};
  // Optional: whether rank r's vector enters the reduction and its result counts among the ranks'
  // (agg_error, rank_spread); empty: every rank. A dedicated parameter server does not.
  std::function<bool(int rank)> contributes = {};
  // Why a step of this run cannot be replayed from an earlier equal one (sim/engine/replay.hpp),
  // or "" when it can: each rank's transfers, their order and any wait_any choice must follow from
  // the step's wire sizes alone, every message of a step must be received within it, and ranks
  // must not run ahead of each other by more than a step. Collectives qualify.
  std::string replay_refusal = "its steps are not known to repeat";
  // True when the algorithm charges each transfer's route latency itself, where the transfer
  // arrives, so that a connection's pieces follow each other on the wire without idling it
  // (nccl_allreduce's chunk-level reference): the run's transfers then carry no latency of their
  // own (a latency factor of 0).
  bool pieces_pay_latency = false;
  // True when some of its transfers (Comm::charge_latency_at_receiver) charge their route latency
  // where they arrive: the run's network then leaves it out for those alone, where it can
  // (sim/comm/receiver_latency.hpp says whether it could).
  bool some_pieces_pay_latency = false;
  // Set for sharded data parallelism: the step's schedule of gathers around compute and the units
  // (sim/api/aggregator.hpp); empty: the gradient is aggregated whole, bucket by bucket (DDP).
  std::optional<ParameterSharding> sharding = {};

  // Optional: what `aggsim validate` prints of the algorithm's own checks besides "ok" (lines, each
  // ending in a newline), e.g. an MSCCL program's verdict.
  std::function<std::string()> checks_report = {};
  // SimGrid actors the run keeps at once besides each rank's own two, over all ranks (an upper
  // bound), and what they are: with the ranks' they decide whether actors' stacks go without guard
  // pages, and whether the run fits in memory at all (sim/engine/actor_stacks.hpp).
  std::int64_t extra_actors = 0;
  std::string extra_actors_what = "";
};

// What one call of an algorithm runs, as collectives.csv names it: the collective (its `collective`
// column and the bus factor of its bandwidths) and the name of what ran (its `algorithm` column).
struct CallIdentity {
  CollectiveKind collective = CollectiveKind::all_reduce;
  std::string algorithm;
  // The call's dense_bytes and wire_bytes count one rank's payload, a p-th of nccl-tests' size (the
  // gathered whole): `allgather`'s calls.
  bool per_rank_bytes = false;
};

struct AlgorithmInfo {
  std::string name;
  std::string summary;
  std::vector<ParamSpec> params;
  // True when payloads are combined in flight (reduce-scatter, trees): needs a summable compressor.
  bool reduces_in_flight = true;
  // True when the algorithm reduces in flight but carries a compressor's payloads itself (fsdp: shard
  // by shard on its reduce-scatters), checking the compressor in its prepare stage: its transport is
  // `algorithm`, not a wrapper around it.
  bool compresses_itself = false;
  // True when every rank ends with the same result (all-reduce, parameter server); false for
  // decentralized schemes where ranks only approach consensus.
  bool consensus = true;
  // What one call's traffic is (collectives.csv's bandwidths, sim/api/collective_call.hpp).
  CollectiveKind collective = CollectiveKind::all_reduce;
  // Its calls count one rank's payload (CallIdentity::per_rank_bytes).
  bool per_rank_bytes = false;
  // Optional: what a call runs under these parameters, when they choose the collective
  // (nccl_allreduce's `collective` key); empty: `collective`, named `name`.
  std::function<CallIdentity(const Params&)> call_identity = {};
  // The algorithm's cost formula: roughly how many messages one rank sends per step on `ranks`
  // ranks, from its communication pattern. A sweep's Slurm array balances its tasks by it.
  std::function<double(int ranks)> messages_per_rank_step;
  // Checks the parameters as a whole against the scenario and, when config.layout() is set, the
  // platform; builds what the ranks share. Throws ParamError naming the offending key. Every check
  // of the algorithm's parameters happens here: `aggsim validate` runs it exactly as `aggsim run`.
  std::function<AlgorithmRun(const AlgorithmConfig&)> prepare;
  // Optional: pins ranks to named hosts (the default maps rank i to the i-th host in natural order).
  std::function<RankPlacement(const Params&)> placement = {};
  // Optional: the one rank count the algorithm runs on (an MSCCL program's GPUs); calibrate and
  // compare refuse measurements at any other. May throw InputError (an unreadable program).
  std::function<int(const Params&)> fixed_ranks = {};
  // How `aggsim calibrate` fits it and what its runs receive of a calibration.
  CalibrationCapability calibration = factor_step_calibration();
  // Optional: why the algorithm cannot run with one bucket per layer (granularity: layer) under
  // these parameters, or "" when it can.
  std::function<std::string(const Params&)> layer_granularity_refusal = {};
};

// What the algorithm's calls run under `params` (AlgorithmInfo::call_identity, else its own name
// and collective).
CallIdentity call_identity(const AlgorithmInfo& algorithm, const Params& params);

// ceil(log2 p) rounds (at least 1): the depth of trees, halving-doubling and gossip schedules.
double log2_rounds(int ranks);

// An algorithm whose ranks share nothing: each rank's aggregator comes from `make(config)`. Its
// steps repeat (replay_refusal is "").
AlgorithmRun independent_ranks(const AlgorithmConfig& config,
                               std::function<std::unique_ptr<Aggregator>(const AlgorithmConfig&)> make);

// Runs the configured algorithm's prepare stage. algorithm_prepares() counts the calls in this
// process (tests check that a run prepares once).
AlgorithmRun prepare_run(const AlgorithmConfig& config);
long algorithm_prepares();

// The prepare stage the scenario loader ran (without the platform), kept for the run, which takes
// it when that stage read nothing of the platform and the run's configuration gives the same stage.
// Taken once: a second run of the same scenario prepares again (a run may change what it shares).
struct PreparedAtLoad {
  AlgorithmConfig config;
  std::optional<AlgorithmRun> run;
  // The loaded stage when it stands for one prepared on `config` (then the slot is emptied).
  std::optional<AlgorithmRun> take_for(const AlgorithmConfig& config);
};

struct CompressorInfo {
  std::string name;
  std::string summary;
  std::vector<ParamSpec> params;
  std::function<std::unique_ptr<Compressor>(const Params&)> make;
  // The transport that carries this compressor's payloads over a reducing collective
  // (AlgorithmInfo::reduces_in_flight); see TransportInfo.
  std::string reducing_transport = "compressed_reduction";
  // True when an encoding's size depends on the values (a threshold keeps what exceeds it, ATOMO
  // draws its atoms): steps then differ and are never replayed.
  bool sizes_depend_on_data = false;
};

// Who carries compressed payloads between ranks (GRACE's communicator role), chosen once per run:
//  - `dense`: no compression, the algorithm sends fp32 gradients;
//  - `algorithm`: the algorithm compresses and decodes itself (all-gather, parameter server);
//  - `compressed_reduction`: a reducing collective adds summable payloads in flight;
//  - `powersgd_aggregation`: PowerSGD's own all-reduce of P, then Q, over a reducing collective.
struct TransportInfo {
  std::string name;
  std::string summary;
  // Checks that it can carry the scenario's compressor; throws ParamError (key `compression`).
  std::function<void(const AlgorithmConfig&)> check = {};
  // Wraps a rank's aggregator so that it carries the compressed representation; empty: unchanged.
  std::function<std::unique_ptr<Aggregator>(std::unique_ptr<Aggregator>, const AlgorithmConfig&)> wrap = {};
};

const std::vector<AlgorithmInfo>& algorithm_table();
const std::vector<CompressorInfo>& compressor_table();
const std::vector<TransportInfo>& transport_table();
const std::vector<MemoryInfo>& memory_table();
const AlgorithmInfo* find_algorithm(std::string_view name);
const CompressorInfo* find_compressor(std::string_view name);
const MemoryInfo* find_memory(std::string_view name);
// The memory a compressor's parameters choose: `memory`, or `residual` for `error_feedback: true`.
// Throws ParamError (key `memory`) when the two contradict each other.
const MemoryInfo& memory_for(const Params& compressor_params);
// The transport of `compressor`'s payloads on `algorithm`.
const TransportInfo& transport_for(const AlgorithmInfo& algorithm, const CompressorInfo& compressor);

// One rank's aggregator: the algorithm's, wrapped by the transport when it has a wrapper.
std::unique_ptr<Aggregator> make_aggregator(const AlgorithmRun& run, const TransportInfo& transport,
                                            const AlgorithmConfig& config);

}  // namespace aggsim
