#include "sim/calibrate/point_plan.hpp"

#include <fmt/format.h>

#include <algorithm>

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

// The platform's GPU generation, when it says one.
std::string platform_gpu(const PlatformSpec& platform) {
  const std::optional<GpuGeneration> gpu = platform.file.empty() ? platform.shape.gpu : xml_declared(platform.file).gpu;
  return gpu ? kGpuNames.name(*gpu) : "";
}
}  // namespace

const CalibrationCapability& calibration_capability(const Scenario& base) {
  static const CalibrationCapability factor_steps = factor_step_calibration();
  return base.algorithm.entry ? base.algorithm.entry->calibration : factor_steps;
}

bool follows_logged_choices(const Scenario& base) {
  return calibration_capability(base).logged_choices.has_value();
}

LoggedPoint logged_point(const Measurement& m) {
  LoggedPoint p;
  p.collective = m.collective;
  p.ranks = m.ranks;
  p.nodes = m.nodes;
  p.bytes = m.bytes;
  p.source = m.source;
  p.observed = m.observed;
  p.observed_source = m.observed_source;
  p.init_channels = m.init_channels;
  p.forced_algorithm = m.env.algorithm;
  p.forced_algorithm_where = m.env.algorithm_where;
  p.forced_protocol = m.env.protocol;
  p.forced_protocol_where = m.env.protocol_where;
  p.min_channels = m.env.min_channels;
  p.max_channels = m.env.max_channels;
  p.channels_where = m.env.channels_where;
  p.not_followed = m.env.not_followed;
  return p;
}

PlanScenario plan_scenario(const Scenario& base) {
  return PlanScenario{base.algorithm.params, may_have_nvswitch(base.platform), platform_gpu(base.platform),
                      base.where("platform") + (base.platform.file.empty() ? "" : ", " + base.platform.file),
                      [&base](const std::string& key) { return base.where(key); }};
}

MissedChoice follow_observed_choice(const Scenario& base, const Measurement& m, PointPlan& plan,
                                    bool observed_too) {
  const std::optional<LoggedChoices>& choices = calibration_capability(base).logged_choices;
  if (!choices) return {};
  return choices->follow(logged_point(m), plan_scenario(base), observed_too, plan.sets);
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
