#include "sim/engine/network_factors.hpp"

#include <fmt/format.h>

#include <simgrid/kernel/resource/NetworkModelIntf.hpp>
#include <simgrid/s4u.hpp>

#include "sim/core/error.hpp"
#include "sim/platform/platform.hpp"

namespace aggsim {

namespace sg4 = simgrid::s4u;

void install_fabric_factors(sg4::Engine& engine) {
  auto factor = [](double node_factor) {
    return [node_factor](double, const sg4::Host* src, const sg4::Host* dst, const std::vector<sg4::Link*>&,
                         const std::unordered_set<sg4::NetZone*>&) {
      // A route over NVLink only (inside a node or an NVLink domain) takes no network factor.
      return same_nvlink_reach(src, dst) ? 1.0 : node_factor;
    };
  };
  auto* model = engine.get_netzone_root()->get_network_model();
  model->set_lat_factor_cb(factor(kLv08LatencyFactor));
  model->set_bw_factor_cb(factor(kLv08BandwidthFactor));
}

void install_zero_latency(sg4::Engine& engine) {
  engine.get_netzone_root()->get_network_model()->set_lat_factor_cb(
      [](double, const sg4::Host*, const sg4::Host*, const std::vector<sg4::Link*>&,
         const std::unordered_set<sg4::NetZone*>&) { return 0.0; });
}

std::optional<RouteFactors> route_factors(const Scenario& sc, const RunCalibration* cal, bool same_node_route) {
  if (cal && cal->has_factors()) return std::nullopt;
  switch (effective_network(sc)) {
    case NetworkPreset::ns3:
      return std::nullopt;
    case NetworkPreset::lv08:
      if (sc.network == NetworkPreset::auto_by_fabric && same_node_route) return RouteFactors{};
      return RouteFactors{kLv08LatencyFactor, kLv08BandwidthFactor};
    default:
      return RouteFactors{};
  }
}

void install_network_factors(sg4::Engine& engine, const std::shared_ptr<const RunCalibration>& cal) {
  if (!cal || !cal->has_factors()) return;
  // One level left out keeps factors of 1 (the platform's values as written).
  auto factor = [cal](bool latency) {
    return [cal, latency](double size, const sg4::Host* src, const sg4::Host* dst, const std::vector<sg4::Link*>&,
                          const std::unordered_set<sg4::NetZone*>&) {
      const LinkFactors f = cal->link_factors(same_nvlink_reach(src, dst), size);
      return latency ? f.latency : f.bandwidth;
    };
  };
  try {
    auto* model = engine.get_netzone_root()->get_network_model();
    model->set_lat_factor_cb(factor(true));
    model->set_bw_factor_cb(factor(false));
  } catch (const std::invalid_argument& e) {
    throw InputError(
        fmt::format("{}: cannot apply the calibration: {} (drop --cfg=network/latency-factor or "
                    "bandwidth-factor)",
                    cal->file, e.what()));
  }
}

}  // namespace aggsim
