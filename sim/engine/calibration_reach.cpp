#include "sim/engine/calibration_reach.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "sim/core/error.hpp"
#include "sim/platform/platform_spec.hpp"

namespace aggsim {

namespace {

bool tcp_model(const std::string& fabric) {
  return fabric == "ethernet";
}

}  // namespace

std::vector<std::string> calibration_reach_warnings(const Scenario& sc, const RunCalibration* run,
                                                    const RankLayout& layout) {
  std::vector<std::string> warnings;
  if (!run) return warnings;
  const RunCalibration& cal = *run;
  const auto& node = layout.node_of_rank;
  bool intra = false;
  for (std::size_t r = 1; r < node.size() && !intra; ++r) intra = node[r] == node[r - 1];
  const bool inter = std::any_of(node.begin(), node.end(), [&](int n) { return n != node.front(); });
  const std::string at = sc.where("calibration");
  if (!cal.link_classes.empty()) {
    const auto seen = [&](const char* c) {
      return std::find(cal.link_classes.begin(), cal.link_classes.end(), c) != cal.link_classes.end();
    };
    if (intra && !seen("intra"))
      warnings.push_back(fmt::format(
          "{}: calibration: {} was fitted on measurements with one rank per node ({}: link_classes): links "
          "inside a node keep the platform's values, not calibrated",
          at, cal.file, cal.link_classes_where));
    if (inter && !seen("inter"))
      warnings.push_back(fmt::format(
          "{}: calibration: {} was fitted on measurements inside one node ({}: link_classes): links "
          "between nodes keep the platform's values{}, not calibrated",
          at, cal.file, cal.link_classes_where, cal.model ? " and " + cal.model->what() : ""));
  }
  const std::string fabric = fabric_name(sc.platform.fabric);
  if (inter && !cal.fabric.empty() && cal.fabric != fabric) {
    if (sc.network == NetworkPreset::auto_by_fabric && tcp_model(cal.fabric) != tcp_model(fabric))
      throw InputError(fmt::format(
          "{}: calibration: {} was fitted on {} ({}: fabric), and this platform's fabric is {}: under "
          "network auto the two run different network models ({}), so the fitted factors do not apply; "
          "calibrate on {} measurements",
          at, cal.file, cal.fabric, cal.fabric_where, fabric,
          "ethernet: LV08's TCP calibration; infiniband and roce: latency + size / bandwidth", fabric));
    warnings.push_back(fmt::format(
        "{}: calibration: {} was fitted on {} ({}: fabric), and this platform's fabric is {}: links between "
        "nodes are extrapolated",
        at, cal.file, cal.fabric, cal.fabric_where, fabric));
  }
  return warnings;
}

}  // namespace aggsim
