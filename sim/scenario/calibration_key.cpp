#include "sim/scenario/calibration_key.hpp"

#include <fmt/format.h>

#include "algorithms/registry.hpp"
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

namespace {
// The algorithm whose model parameters `cal` holds: the one it names when that one fits model
// parameters, else, for a file with a model's section, the first entry that fits them; null for a
// calibration of factor steps.
const AlgorithmInfo* model_fitter(const Calibration& cal) {
  if (const AlgorithmInfo* named = find_algorithm(cal.algorithm); named && named->calibration.model) return named;
  if (!cal.model) return nullptr;
  for (const AlgorithmInfo& entry : algorithm_table())
    if (entry.calibration.model) return &entry;
  return nullptr;
}
}  // namespace

void check_calibration_family(const Scenario& sc) {
  if (!sc.calibration || !sc.algorithm.entry) return;
  const Calibration& cal = *sc.calibration;
  const std::string& name = sc.algorithm.name;
  const CalibrationCapability& own = sc.algorithm.entry->calibration;
  const bool reads_model =
      own.model || (own.reads_model_parameters && own.reads_model_parameters(sc.algorithm.params));
  const AlgorithmInfo* fitter = model_fitter(cal);
  if (fitter && !reads_model)
    throw InputError(fmt::format(
        "{}: calibration: {} was fitted for {} ({}): its numbers are {}, which {} does not model; calibrate {} "
        "on its own measurements (aggsim calibrate with this scenario)",
        sc.where("calibration"), cal.file, fitter->name,
        cal.model_where.empty() ? cal.algorithm_where + ": algorithm" : cal.model_where + ": " + fitter->calibration.model->section,
        fitter->calibration.model->numbers_are, name, name));
  if (!cal.algorithm.empty() && !fitter && own.model)
    throw InputError(fmt::format(
        "{}: calibration: {} holds per-size-step factors fitted for {} ({}: algorithm), which fold that "
        "algorithm's own timing into the links; {} {}, so they would count twice: calibrate {} on the same "
        "measurements",
        sc.where("calibration"), cal.file, cal.algorithm, cal.algorithm_where, name, own.model->models_itself,
        name));
}

}  // namespace aggsim
