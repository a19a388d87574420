#include "sim/calibrate/point_plan.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "algorithms/nccl/nccl_tuning.hpp"
#include "algorithms/registry.hpp"
#include "sim/core/error.hpp"
#include "sim/platform/platform.hpp"

namespace aggsim {

void check_plain_collective(const Scenario& base, const std::string& verb) {
  const auto fail = [&](const std::string& what) {
    throw InputError(fmt::format("{}: {} times bare collectives: remove {} from this scenario",
                                 base.source_file, verb, what));
  };
  if (base.workload.enabled) fail("the workload");
  if (!base.model.layers.empty()) fail("model.layers");
  if (base.compression.name != "none") fail("the compression");
}

namespace {
// A generated platform says whether its nodes have a switch. A platform file that sets the host
// property nowhere has none; one that sets it on some hosts may still put the ranks on others, which
// the point's run finds once the platform is built.
bool may_have_nvswitch(const PlatformSpec& platform) {
  if (platform.file.empty()) return platform.shape.nvswitch;
  return xml_declared(platform.file).some_nvswitch;
}

// The GPU generation NCCL's model tunes for: algorithm.gpu, else the platform's, else hopper.
std::string scenario_gpu(const Scenario& base) {
  const Params& p = base.algorithm.params;
  if (p.has("gpu") && !p.text("gpu").empty()) return p.text("gpu");
  const std::optional<GpuGeneration> gpu =
      base.platform.file.empty() ? base.platform.shape.gpu : xml_declared(base.platform.file).gpu;
  return gpu ? kGpuNames.name(*gpu) : "hopper";
}
}  // namespace

const CalibrationCapability& calibration_capability(const Scenario& base) {
  static const CalibrationCapability factor_steps = factor_step_calibration();
  return base.algorithm.entry ? base.algorithm.entry->calibration : factor_steps;
}

bool follows_logged_choices(const Scenario& base) {
  return calibration_capability(base).follows_logged_choices;
}

MissedChoice follow_observed_choice(const Scenario& base, const Measurement& m, PointPlan& plan,
                                    bool observed_too) {
  if (!follows_logged_choices(base) || m.collective == "sendrecv") return {};
  MissedChoice missed;
  // NCCL's tuning lines say what ran; without them, the log's NCCL_ALGO / NCCL_PROTO what was forced.
  const bool tuned = observed_too && (!m.observed.nccl_algorithm.empty() || !m.observed.protocol.empty());
  const std::string& algorithm = tuned ? m.observed.nccl_algorithm : m.env.algorithm;
  const std::string& algorithm_where = tuned ? m.observed_source : m.env.algorithm_where;
  const std::optional<NcclAlgorithm> named = nccl_algorithm_named(algorithm);
  // Other collectives run NCCL's ring here (nccl_allreduce's collective key), and reduce-scatter and
  // all-gather PAT with one GPU a node.
  const bool gathering = m.collective == "reduce_scatter" || m.collective == "all_gather";
  const bool runnable =
      named && (*named == NcclAlgorithm::pat ? gathering && m.ranks == m.nodes
                                             : m.collective == "all_reduce" || *named == NcclAlgorithm::ring);
  // What NCCL ran, or what a log's NCCL_ALGO / NCCL_PROTO force, must be something NCCL can run on
  // the log's ranks (past a switch, the point's run finds where the ranks are).
  const std::string gpu = scenario_gpu(base);
  const NvlsHardware hardware{may_have_nvswitch(base.platform), gpu == "hopper" || gpu == "blackwell",
                              m.nodes > 0 ? m.ranks / m.nodes : m.ranks};
  const NcclPlacement placement = runnable ? nccl_placement(*named, m.nodes, hardware) : NcclPlacement::runs;
  if (placement == NcclPlacement::needs_switch)
    throw InputError(fmt::format(
        "{}: NCCL ran {} here, which needs GPUs on a switch that reduces, and the scenario's platform "
        "({}{}) has none: describe the nodes as they are (platform.nvswitch: true on a generated "
        "platform, host property aggsim_nvswitch=\"true\" in XML)",
        algorithm_where, algorithm, base.where("platform"),
        base.platform.file.empty() ? "" : ", " + base.platform.file));
  if (placement == NcclPlacement::needs_nvls_gpu)
    throw InputError(fmt::format(
        "{}: NCCL ran {} here, which only GPUs with NVLS run (Hopper and later), and the scenario's "
        "GPU generation is {} ({}): describe the GPUs as they are (platform.gpu or algorithm.gpu: hopper)",
        algorithm_where, algorithm, gpu, base.where("algorithm.gpu")));
  if (placement == NcclPlacement::needs_three_gpus)
    throw InputError(fmt::format("{}: {} here: NCCL runs NVLS only on nodes of more than 2 GPUs, and this "
                                 "log's points have {} a node",
                                 algorithm_where, algorithm, hardware.smallest_node));
  if (runnable && !tuned) {
    // NCCL's tuning lines say what it did run; the settings only what it was told to.
    const std::string& protocol = m.env.protocol;
    if (placement == NcclPlacement::nvls_spans_nodes)
      throw InputError(
          fmt::format("{}: NCCL_ALGO leaves {} only NVLS, which NCCL runs inside one node, and this "
                      "log's points span {} nodes (NVLS-Tree joins nodes)",
                      algorithm_where, m.collective, m.nodes));
    if (placement == NcclPlacement::nvls_tree_on_one_node)
      throw InputError(
          fmt::format("{}: NCCL_ALGO leaves {} only NVLS-Tree, which joins nodes, and this log's "
                      "points are on one node",
                      algorithm_where, m.collective));
    const std::optional<Protocol> forced = protocol_named(protocol);
    if (forced && !nccl_protocol_runs(*named, *forced))
      throw InputError(
          fmt::format("{}: NCCL_PROTO leaves {} only {}, and NCCL_ALGO only {}, which NCCL runs "
                      "with the simple protocol only",
                      m.env.protocol_where, m.collective, protocol, algorithm));
  }
  if (runnable) {
    plan.sets.push_back("algorithm.nccl_algorithm=" + algorithm);
  } else if (!algorithm.empty()) {
    missed.what = fmt::format("NCCL's algorithm {} (the model's choice is used)", algorithm);
    missed.where = algorithm_where;
  }
  const std::string& protocol = tuned ? m.observed.protocol : m.env.protocol;
  if (!protocol.empty() && (runnable || algorithm.empty()))
    plan.sets.push_back("algorithm.protocol=" + protocol);
  // NCCL from 2.22 opens up to 64 channels, the model up to 32 (NCCL 2.21.5's MAXCHANNELS).
  const auto channels = [](int c) { return std::min(c, kNcclMaxChannels); };
  if (tuned && m.observed.channels > 0 && runnable) {
    plan.sets.push_back(fmt::format("algorithm.channels={}", channels(m.observed.channels)));
  } else if (observed_too && m.init_channels > 0) {
    plan.sets.push_back(fmt::format("algorithm.comm_channels={}", channels(m.init_channels)));
  } else {
    // NCCL_MIN_NCHANNELS / NCCL_MAX_NCHANNELS bound the channels NCCL finds (the init line, when the
    // log has one, counts what they left).
    if (m.env.min_channels > 0)
      plan.sets.push_back(fmt::format("algorithm.min_channels={}", channels(m.env.min_channels)));
    if (m.env.max_channels > 0)
      plan.sets.push_back(fmt::format("algorithm.max_channels={}", channels(m.env.max_channels)));
  }
  return missed;
}

PointPlan plan_point(const Scenario& base, const Measurement& m, bool keep_platform) {
  const int p = m.ranks, n = m.nodes;
  if (base.algorithm.entry && base.algorithm.entry->fixed_ranks) {
    const int only = base.algorithm.entry->fixed_ranks(base.algorithm.params);
    if (only != p)
      throw InputError(
          fmt::format("{}: {} on {} ranks: algorithm {} runs on exactly {} ranks (its program's "
                      "ngpus): keep only measurements at {} ranks",
                      m.source, m.collective, p, base.algorithm.name, only, only));
  }
  if (p < 2)
    throw InputError(
        fmt::format("{}: {} on {} rank has no communication to simulate", m.source, m.collective, p));
  PointPlan plan;
  plan.inter_node = n > 1;
  // nccl-tests' reduction (redop sum, as the tables print it): NCCL runs NVLS for it, not for avg.
  plan.sets = {"steps=1", "model.math=off", "output.trace=false", "algorithm.op=sum"};
  if (!keep_platform) plan.sets.push_back(fmt::format("ranks={}", p));
  if (!keep_platform && !base.platform.topology.empty()) {
    if (p % n != 0)
      throw InputError(
          fmt::format("{}: {} ranks on {} nodes: the generated platform needs the same number of "
                      "ranks on every node",
                      m.source, p, n));
    plan.sets.push_back(fmt::format("platform.gpus_per_node={}", p / n));
    // A node of one GPU has no switch to join it to others: the scenario's nodes as this shape.
    if (p == n && base.platform.shape.nvswitch) plan.sets.push_back("platform.nvswitch=false");
    plan.sets.push_back(base.platform.shape.sized_by_hosts ? fmt::format("platform.hosts={}", p)
                                                     : fmt::format("platform.nodes={}", n));
  }
  const CollectivePlan collective = calibration_capability(base).plan(m.collective, p, m.bytes, m.source);
  plan.sets.insert(plan.sets.end(), collective.sets.begin(), collective.sets.end());
  plan.sets.push_back(fmt::format("model.size={}B", collective.model_bytes));
  plan.divisor = collective.divisor;
  plan.message_bytes = collective.message_bytes;
  if (m.bytes == 0)
    throw InputError(fmt::format("{}: a 0-byte {} has nothing to simulate", m.source, m.collective));
  return plan;
}

}  // namespace aggsim
