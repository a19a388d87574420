#include "sim/scenario/calibration_key.hpp"

#include <fmt/format.h>

#include "sim/core/error.hpp"
#include "sim/platform/platform.hpp"
#include "sim/platform/topology.hpp"

namespace aggsim {

void read_calibration_key(const YamlValue& value, Scenario& sc, bool network_given) {
  const std::string file = find_input_file(value, "calibration", sc.source_file, DataKind::calibration);
  const TopologyInfo* generator = sc.platform.generator;
  Calibration cal = load_calibration(file, generator ? &generator->params : nullptr);
  const NetworkPreset preset = find_network_preset(cal.network).value_or(NetworkPreset::lv08);
  if (network_given && preset != sc.network)
    value.fail(fmt::format("{} was fitted under network {}, but the scenario sets network {}", file,
                           cal.network, network_preset_name(sc.network)));
  sc.network = preset;
  for (const auto& [key, v] : cal.platform_params.all()) sc.platform.params.set(key, v);
  // The measured machine's link values replace the scenario's: decode the platform with them.
  if (generator && !cal.platform_params.all().empty()) {
    try {
      decode_generated_platform(sc.platform);
    } catch (const std::invalid_argument& e) {
      value.fail(fmt::format("{}: the platform with its link values: {}", file, e.what()));
    }
  }
  sc.calibration = std::move(cal);
}

void check_calibration_family(const Scenario& sc) {
  if (!sc.calibration) return;
  const Calibration& cal = *sc.calibration;
  const std::string& name = sc.algorithm.name;
  const bool runs_nccl =
      name == "nccl_allreduce" || (name == "hierarchical_allreduce" && sc.algorithm.params.has("inter") &&
                                   sc.algorithm.params.text("inter") == "nccl");
  const bool for_nccl = cal.nccl.has_value() || cal.algorithm == "nccl_allreduce";
  if (for_nccl && !runs_nccl)
    throw InputError(fmt::format(
        "{}: calibration: {} was fitted for nccl_allreduce ({}): its numbers are NCCL's protocol costs "
        "and the share of each link's bandwidth NCCL reaches, which {} does not model; calibrate {} on "
        "its own measurements (aggsim calibrate with this scenario)",
        sc.where("calibration"), cal.file,
        cal.nccl_where.empty() ? cal.algorithm_where + ": algorithm" : cal.nccl_where + ": nccl", name,
        name));
  if (!cal.algorithm.empty() && !for_nccl && name == "nccl_allreduce")
    throw InputError(fmt::format(
        "{}: calibration: {} holds per-size-step factors fitted for {} ({}: algorithm), which fold that "
        "algorithm's own timing into the links; nccl_allreduce models NCCL's pipelining, protocols and "
        "base latencies itself, so they would count twice: calibrate nccl_allreduce on the same "
        "measurements",
        sc.where("calibration"), cal.file, cal.algorithm, cal.algorithm_where));
}

}  // namespace aggsim
