#include "sim/engine/network_factors.hpp"

#include <fmt/format.h>

#include <functional>
#include <stdexcept>
#include <string>

#include <simgrid/kernel/resource/NetworkModelIntf.hpp>
#include <simgrid/s4u.hpp>
#include <xbt/config.hpp>

#include "sim/comm/receiver_latency.hpp"
#include "sim/core/error.hpp"
#include "sim/platform/platform.hpp"

namespace aggsim {

namespace sg4 = simgrid::s4u;

namespace {

using LatencyFactor = std::function<simgrid::kernel::resource::NetworkModelIntf::NetworkFactorCb>;
// The latency factor this run installed (none: the network model's own), which
// install_receiver_latency keeps for the transfers it does not leave latency-free.
LatencyFactor g_latency_factor;

void set_latency_factor(sg4::Engine& engine, LatencyFactor f) {
  engine.get_netzone_root()->get_network_model()->set_lat_factor_cb(f);
  g_latency_factor = std::move(f);
}

}  // namespace

void forget_installed_factors() {
  g_latency_factor = nullptr;
  receiver_latency::reset();
}

void install_fabric_factors(sg4::Engine& engine) {
  auto factor = [](double node_factor) {
    return [node_factor](double, const sg4::Host* src, const sg4::Host* dst, const std::vector<sg4::Link*>&,
                         const std::unordered_set<sg4::NetZone*>&) {
      // A route over NVLink only (inside a node or an NVLink domain) takes no network factor.
      return same_nvlink_reach(src, dst) ? 1.0 : node_factor;
    };
  };
  set_latency_factor(engine, factor(kLv08LatencyFactor));
  engine.get_netzone_root()->get_network_model()->set_bw_factor_cb(factor(kLv08BandwidthFactor));
}

void install_zero_latency(sg4::Engine& engine) {
  set_latency_factor(engine, [](double, const sg4::Host*, const sg4::Host*, const std::vector<sg4::Link*>&,
                                const std::unordered_set<sg4::NetZone*>&) { return 0.0; });
}

void install_receiver_latency(sg4::Engine& engine) {
  // The factor every other transfer keeps: the installed callback's, or the model's own (SimGrid
  // 3.32's CM02 and LV08 multiply by network/latency-factor whatever the size).
  LatencyFactor base = g_latency_factor;
  if (!base) {
    // Other models' own factors may depend on the size (SMPI's), which no callback can ask them.
    const auto model = simgrid::config::get_value<std::string>("network/model");
    if (model != "CM02" && model != "LV08") return;
    const double own = simgrid::config::get_value<double>("network/latency-factor");
    base = [own](double, const sg4::Host*, const sg4::Host*, const std::vector<sg4::Link*>&,
                 const std::unordered_set<sg4::NetZone*>&) { return own; };
  }
  try {
    engine.get_netzone_root()->get_network_model()->set_lat_factor_cb(
        [base](double size, const sg4::Host* src, const sg4::Host* dst, const std::vector<sg4::Link*>& links,
               const std::unordered_set<sg4::NetZone*>& zones) {
          return receiver_latency::take(src, size) ? 0.0 : base(size, src, dst, links, zones);
        });
  } catch (const std::invalid_argument&) {
    return;  // --cfg=network/latency-factor given: SimGrid takes no callback beside it
  }
  receiver_latency::set_available(true);
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
    set_latency_factor(engine, factor(true));
    engine.get_netzone_root()->get_network_model()->set_bw_factor_cb(factor(false));
  } catch (const std::invalid_argument& e) {
    throw InputError(
        fmt::format("{}: cannot apply the calibration: {} (drop --cfg=network/latency-factor or "
                    "bandwidth-factor)",
                    cal->file, e.what()));
  }
}

}  // namespace aggsim
