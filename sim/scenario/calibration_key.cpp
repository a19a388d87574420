#include "sim/scenario/calibration_key.hpp"

#include <fmt/format.h>

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
  sc.calibration = std::move(cal);
}

}  // namespace aggsim
