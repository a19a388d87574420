#pragma once
// Runs one scenario in this process: one SimGrid Engine, one actor per rank. SimGrid allows one
// Engine per process, so call simulate() at most once per process (tests fork for isolation).
#include <Eigen/Core>
#include <functional>
#include <memory>
#include <simgrid/s4u.hpp>
#include <string>
#include <vector>

#include "algorithms/registry.hpp"
#include "sim/api/rank_layout.hpp"
#include "sim/engine/collective_log.hpp"
#include "sim/engine/link_classes.hpp"
#include "sim/engine/run_progress.hpp"
#include "sim/metrics/math_log.hpp"
#include "sim/metrics/step_log.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/workload/evaluator.hpp"

namespace aggsim {

struct SimulationHooks {
  // Called on each rank after each aggregation with its proxy gradient before and after (sharded
  // data parallelism: after the step's last reduce-scatter, the rank's reduced shards, the rest zero).
  std::function<void(int rank, int step, const Eigen::VectorXf& before, const Eigen::VectorXf& after)>
      after_aggregate;
  // Called on each rank after each training step with its updated weights (workload runs only).
  std::function<void(int rank, int step, const Eigen::VectorXf& weights)> after_step;
  // Called once the platform is loaded and the ranks placed, just before simulating, with the
  // platform's description ("platforms/x.xml (16 hosts)") and the effective cost of each link class.
  std::function<void(const std::string& platform, const std::vector<LinkClassCost>& links)> on_start;
  // Called about every `progress_interval_s` seconds of wall time while simulating (checked as
  // simulated time advances), then once more when the simulation ends. Reads, never changes, the run.
  std::function<void(const RunProgress&)> progress;
  double progress_interval_s = 2;
};

// The sizes of one aggregation call (a bucket): its dense fp32 gradient, and one rank's contribution
// on the wire as the scenario's compressor encodes it (the same without compression).
struct CallSize {
  std::uint64_t dense_bytes = 0;
  std::uint64_t wire_bytes = 0;
  // Set where the run's calls are not all its algorithm's one collective (sharded data parallelism's
  // gathers beside its reduce-scatters): this call's collective, the ranks of each of its groups (the
  // bus factor's p), and the layers it covers (collectives.csv's `unit`, "first-last").
  std::optional<CollectiveKind> collective = {};
  int group_size = 0;
  std::string unit = {};
  // Under a parallel layout, the ranks of the first data-parallel group that runs this call (its
  // pipeline stage's tensor rank 0); empty: the run's rank_group.
  std::string rank_group = {};
};

struct SimulationResult {
  StepLog log{0, 0};
  CollectiveLog calls{0};            // one record per aggregation call
  std::vector<CallSize> call_sizes;  // per bucket, the same every step
  std::string rank_group;            // the ranks whose gradients a call reduces ("0-15")
  int group_size = 0;                // how many
  std::vector<std::pair<std::string, std::string>> extra_files;  // trace.json, links.csv (output.trace)
  double sim_time_s = 0;
  std::uint64_t bytes_sent = 0;
  std::uint64_t messages_sent = 0;
  std::string platform_description;          // "platforms/x.xml (16 hosts)" or "cluster (64 hosts)"
  std::vector<LinkClassCost> link_classes;   // effective per-hop costs (start line, resolved.yaml)
  std::shared_ptr<const RunCalibration> calibration;  // what the run received of its calibration (null: none)
  std::vector<Evaluation> evaluations;       // held-out evaluations of the averaged model (workload runs)
  std::vector<SummaryField> summary_fields;  // the algorithm's own figures (AlgorithmRun)
  // Per step, with math on: agg_error, compress_error, rank_spread (MathLog); empty with math off.
  std::vector<std::optional<StepMath>> math;
  int steps_replayed = 0;      // steps whose timing was reused (sim/engine/replay.hpp)
  std::string replay_refusal;  // why none could be ("" when replay was possible)
};

// Everything a run checks and builds before the simulation starts: the engine with the platform
// loaded, the ranks mapped to hosts, the algorithm prepared on the platform's rank layout.
// `aggsim validate` stops here and `aggsim run` simulates it, so both refuse the same scenarios
// with the same messages. Throws InputError.
struct PreparedRun {
  PreparedRun(const Scenario& scenario, const std::vector<std::string>& simgrid_args, bool link_load);
  ~PreparedRun();
  PreparedRun(const PreparedRun&) = delete;  // config.layout points into it
  PreparedRun& operator=(const PreparedRun&) = delete;

  std::unique_ptr<simgrid::s4u::Engine> engine;
  std::vector<simgrid::s4u::Host*> hosts;  // rank r's host is hosts[r]
  std::string platform_description;
  RankLayout layout;
  // A parallel layout's first data-parallel group (the algorithm is prepared on it: every group has
  // its shape): its nodes and hosts by data rank. Empty without a parallel layout.
  RankLayout group_layout;
  std::vector<simgrid::s4u::Host*> group_hosts;
  std::vector<LinkClassCost> link_classes;
  AlgorithmConfig config;  // config.layout points at `layout` (at `group_layout` with a parallel layout)
  AlgorithmRun algorithm;
};

// Whether this process has made a SimGrid engine (SimGrid's state then stays behind it: a child
// forked from such a process would not start as a fresh one).
bool simgrid_engine_made();

// `simgrid_args` are --cfg=... / --log=... flags passed through to SimGrid (they override ours).
SimulationResult simulate(const Scenario& scenario, const std::vector<std::string>& simgrid_args,
                          const SimulationHooks& hooks = {});

// Prepares the run (PreparedRun) without simulating it, for `aggsim validate`. Returns the platform
// description, and in `checks_report` what the algorithm reports of its own checks
// (AlgorithmRun::checks_report). Throws InputError.
std::string check_platform(const Scenario& scenario, const std::vector<std::string>& simgrid_args,
                           std::string* checks_report = nullptr);

// SimGrid settings a network preset stands for.
std::vector<std::string> network_preset_config(NetworkPreset preset);

// The `lv08` preset merges flow completions closer than this many seconds (SimGrid's
// surf/precision): the time `kMergedSizeDifferenceBytes` take on the platform's slowest link at the
// share of one of a node's ranks, at least SimGrid's default. Flows whose sizes differ by one fp32
// element (unevenly split chunks) then finish in one event: at LV08's efficiency (0.97/1.05) one
// element takes 4.3 B of the full rate. Each merged completion moves earlier by at most this much,
// so a run's simulated time differs from plain LV08 by at most (events) x this.
inline constexpr double kSimGridDefaultPrecision = 1e-9;
inline constexpr double kMergedSizeDifferenceBytes = 8;
double lv08_completion_precision(double slowest_link_bandwidth, int ranks_per_node);

std::string simgrid_version();

}  // namespace aggsim
