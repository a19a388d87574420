#include "algorithms/nccl/calibration/nccl_logged_choice.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "algorithms/nccl/nccl_tuning.hpp"
#include "algorithms/nccl/protocol.hpp"
#include "sim/core/error.hpp"

namespace aggsim {

namespace {

// The GPU generation NCCL's model tunes for: algorithm.gpu, else the platform's, else hopper.
std::string tuned_gpu(const PlanScenario& scenario) {
  const Params& p = scenario.algorithm_params;
  if (p.has("gpu") && !p.text("gpu").empty()) return p.text("gpu");
  return scenario.platform_gpu.empty() ? "hopper" : scenario.platform_gpu;
}

// What NCCL ran, or what a log's NCCL_ALGO forces, must be something NCCL can run on the log's ranks
// (past a switch, the point's run finds where the ranks are).
void check_placement(NcclPlacement placement, const std::string& algorithm, const std::string& where,
                     const PlanScenario& scenario, const std::string& gpu, int smallest_node) {
  if (placement == NcclPlacement::needs_switch)
    throw InputError(fmt::format(
        "{}: NCCL ran {} here, which needs GPUs on a switch that reduces, and the scenario's platform "
        "({}) has none: describe the nodes as they are (platform.nvswitch: true on a generated "
        "platform, host property aggsim_nvswitch=\"true\" in XML)",
        where, algorithm, scenario.platform_where));
  if (placement == NcclPlacement::needs_nvls_gpu)
    throw InputError(fmt::format(
        "{}: NCCL ran {} here, which only GPUs with NVLS run (Hopper and later), and the scenario's "
        "GPU generation is {} ({}): describe the GPUs as they are (platform.gpu or algorithm.gpu: hopper)",
        where, algorithm, gpu, scenario.where("algorithm.gpu")));
  if (placement == NcclPlacement::needs_three_gpus)
    throw InputError(fmt::format("{}: {} here: NCCL runs NVLS only on nodes of more than 2 GPUs, and this "
                                 "log's points have {} a node",
                                 where, algorithm, smallest_node));
}

// What NCCL_ALGO / NCCL_PROTO force must be runnable where the log's points are.
void check_forced(const LoggedPoint& m, NcclPlacement placement, NcclAlgorithm named) {
  if (placement == NcclPlacement::nvls_spans_nodes)
    throw InputError(fmt::format("{}: NCCL_ALGO leaves {} only NVLS, which NCCL runs inside one node, and this "
                                 "log's points span {} nodes (NVLS-Tree joins nodes)",
                                 m.forced_algorithm_where, m.collective, m.nodes));
  if (placement == NcclPlacement::nvls_tree_on_one_node)
    throw InputError(fmt::format("{}: NCCL_ALGO leaves {} only NVLS-Tree, which joins nodes, and this log's "
                                 "points are on one node",
                                 m.forced_algorithm_where, m.collective));
  const std::optional<Protocol> forced = protocol_named(m.forced_protocol);
  if (forced && !nccl_protocol_runs(named, *forced))
    throw InputError(fmt::format("{}: NCCL_PROTO leaves {} only {}, and NCCL_ALGO only {}, which NCCL runs "
                                 "with the simple protocol only",
                                 m.forced_protocol_where, m.collective, m.forced_protocol, m.forced_algorithm));
}

// The channels: the tuning line's, else the init lines', else NCCL_MIN/MAX_NCHANNELS. NCCL from 2.22
// opens up to 64 channels, the model up to 32 (NCCL 2.21.5's MAXCHANNELS).
void follow_channels(const LoggedPoint& m, bool tuned, bool runnable, bool observed_too,
                     std::vector<std::string>& sets) {
  const auto channels = [](int c) { return std::min(c, kNcclMaxChannels); };
  if (tuned && m.observed.channels > 0 && runnable) {
    sets.push_back(fmt::format("algorithm.channels={}", channels(m.observed.channels)));
  } else if (observed_too && m.init_channels > 0) {
    sets.push_back(fmt::format("algorithm.comm_channels={}", channels(m.init_channels)));
  } else {
    // NCCL_MIN_NCHANNELS / NCCL_MAX_NCHANNELS bound the channels NCCL finds (the init line, when the
    // log has one, counts what they left).
    if (m.min_channels > 0) sets.push_back(fmt::format("algorithm.min_channels={}", channels(m.min_channels)));
    if (m.max_channels > 0) sets.push_back(fmt::format("algorithm.max_channels={}", channels(m.max_channels)));
  }
}

}  // namespace

MissedChoice follow_nccl_logged_choice(const LoggedPoint& m, const PlanScenario& scenario, bool observed_too,
                                       std::vector<std::string>& sets) {
  if (m.collective == "sendrecv") return {};
  MissedChoice missed;
  // NCCL's tuning lines say what ran; without them, the log's NCCL_ALGO / NCCL_PROTO what was forced.
  const bool tuned = observed_too && (!m.observed.nccl_algorithm.empty() || !m.observed.protocol.empty());
  const std::string& algorithm = tuned ? m.observed.nccl_algorithm : m.forced_algorithm;
  const std::string& algorithm_where = tuned ? m.observed_source : m.forced_algorithm_where;
  const std::optional<NcclAlgorithm> named = nccl_algorithm_named(algorithm);
  // Other collectives run NCCL's ring here (nccl_allreduce's collective key), and reduce-scatter and
  // all-gather PAT with one GPU a node.
  const bool gathering = m.collective == "reduce_scatter" || m.collective == "all_gather";
  const bool runnable =
      named && (*named == NcclAlgorithm::pat ? gathering && m.ranks == m.nodes
                                             : m.collective == "all_reduce" || *named == NcclAlgorithm::ring);
  const std::string gpu = tuned_gpu(scenario);
  const NvlsHardware hardware{scenario.may_have_switch, gpu == "hopper" || gpu == "blackwell",
                              m.nodes > 0 ? m.ranks / m.nodes : m.ranks};
  const NcclPlacement placement = runnable ? nccl_placement(*named, m.nodes, hardware) : NcclPlacement::runs;
  check_placement(placement, algorithm, algorithm_where, scenario, gpu, hardware.smallest_node);
  // NCCL's tuning lines say what it did run; the settings only what it was told to.
  if (runnable && !tuned) check_forced(m, placement, *named);
  if (runnable) {
    sets.push_back("algorithm.nccl_algorithm=" + algorithm);
  } else if (!algorithm.empty()) {
    missed.what = fmt::format("NCCL's algorithm {} (the model's choice is used)", algorithm);
    missed.where = algorithm_where;
  }
  const std::string& protocol = tuned ? m.observed.protocol : m.forced_protocol;
  if (!protocol.empty() && (runnable || algorithm.empty())) sets.push_back("algorithm.protocol=" + protocol);
  follow_channels(m, tuned, runnable, observed_too, sets);
  return missed;
}

namespace {

// The notes on one point's settings (NCCL_ALGO, NCCL_PROTO, channel bounds) with where each is stated.
void setting_notes(const LoggedPoint& m, std::vector<std::pair<std::string, std::string>>& notes) {
  if (!m.forced_algorithm.empty())
    notes.emplace_back(m.forced_algorithm_where,
                       fmt::format("NCCL_ALGO: this log's {} points run {}", m.collective, m.forced_algorithm));
  if (!m.forced_protocol.empty())
    notes.emplace_back(m.forced_protocol_where,
                       fmt::format("NCCL_PROTO: this log's {} points run {}", m.collective, m.forced_protocol));
  std::string bounds;
  if (m.min_channels > 0) bounds = fmt::format("at least {}", m.min_channels);
  if (m.max_channels > 0) bounds += fmt::format("{}at most {}", bounds.empty() ? "" : " and ", m.max_channels);
  if (!bounds.empty())
    notes.emplace_back(m.channels_where,
                       fmt::format("NCCL's channel settings: this log's points run on {} channels, unless an init "
                                   "line counts them",
                                   bounds));
}

// The scenario's forced algorithm.nccl_algorithm / algorithm.protocol (`key`) against what the
// logs' all-reduce points were told to run or ran.
void check_forced_key(const std::vector<LoggedPoint>& points, const PlanScenario& scenario, const std::string& key) {
  const Params& params = scenario.algorithm_params;
  if (!params.has(key)) return;
  const std::string forced = params.text(key);
  if (forced == "auto") return;
  const bool protocol = key == "protocol";
  // Only all-reduce points run the scenario's algorithm (see plan_point).
  for (const auto& m : points) {
    if (m.collective != "all_reduce") continue;
    const std::string& told = protocol ? m.forced_protocol : m.forced_algorithm;
    if (!told.empty() && told != forced)
      throw InputError(fmt::format(
          "{}: algorithm.{}: this log's NCCL_{} runs {} in its all_reduce, but the scenario forces {} "
          "({}); "
          "leave {} to auto, or set it to {}",
          protocol ? m.forced_protocol_where : m.forced_algorithm_where, key, protocol ? "PROTO" : "ALGO", told,
          forced, scenario.where("algorithm." + key), key, told));
    if (m.observed.nccl_algorithm.empty()) continue;
    const std::string& seen = protocol ? m.observed.protocol : m.observed.nccl_algorithm;
    if (seen.empty() || seen == forced) continue;
    throw InputError(fmt::format(
        "{}: algorithm.{}: NCCL chose {} for the {}-byte all_reduce of {}, but the scenario forces {} "
        "({}); measure with NCCL_{}={} or leave {} to auto",
        m.observed_source, key, seen, m.bytes, m.source, forced, scenario.where("algorithm." + key),
        protocol ? "PROTO" : "ALGO", forced, key));
  }
}

}  // namespace

void check_nccl_logged_choices(const std::vector<LoggedPoint>& points, const PlanScenario& scenario,
                               const std::function<void(const std::string&)>& say) {
  std::set<std::string> said;  // once per setting and file
  for (const auto& m : points) {
    std::vector<std::pair<std::string, std::string>> notes;
    setting_notes(m, notes);
    for (const auto& [where, what] : notes)
      if (!where.empty() && said.insert(where + what).second) say(fmt::format("note: {}: {}", where, what));
    for (const auto& [where, what] : m.not_followed)
      if (said.insert(where + what).second)
        say(fmt::format("warning: {}: {}: not followed by the simulation", where, what));
  }
  for (const std::string key : {"nccl_algorithm", "protocol"}) check_forced_key(points, scenario, key);
}

LoggedChoices nccl_logged_choices() {
  return {follow_nccl_logged_choice, check_nccl_logged_choices};
}

}  // namespace aggsim
