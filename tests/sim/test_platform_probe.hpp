#pragma once
// Builds a platform (a YAML `platform:` mapping) in a forked child and reports on it: the hosts in
// rank order, their node property, or the time of one message between two hosts under the
// alpha-beta settings (CM02, TCP-gamma 0, no crosstraffic: latency + bytes / bandwidth exactly).
#include <fmt/format.h>

#include <simgrid/s4u.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "sim/platform/platform.hpp"
#include "sim/scenario/scenario_loader.hpp"
#include "support/isolated.hpp"

namespace aggsim::test {

namespace sg4 = simgrid::s4u;

inline Scenario platform_scenario(const std::string& platform) {
  return load_scenario_text(
      fmt::format("ranks: 1\nplatform: {}\nalgorithm: {{name: ring_allreduce}}\n", platform), "probe.yaml");
}

inline std::unique_ptr<sg4::Engine> probe_engine() {
  std::vector<std::string> args = {"probe",
                                   "--cfg=network/model:CM02",
                                   "--cfg=network/TCP-gamma:0",
                                   "--cfg=network/crosstraffic:0",
                                   "--log=xbt_cfg.thres:warning",
                                   "--log=root.thres:critical"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  int argc = static_cast<int>(argv.size());
  argv.push_back(nullptr);
  return std::make_unique<sg4::Engine>(&argc, argv.data());
}

struct HostInfo {
  std::string name;
  std::string node;  // kNodeProperty, "-" when absent
};

// Hosts of the platform in natural (rank) order.
inline std::vector<HostInfo> platform_hosts(const std::string& platform) {
  const std::string text = run_isolated([&] {
    const Scenario sc = platform_scenario(platform);
    auto engine = probe_engine();
    build_platform(sc.platform, *engine);
    std::string out;
    for (const auto* h : hosts_in_natural_order(*engine)) {
      const char* node = h->get_property(kNodeProperty);
      out += h->get_name() + " " + (node ? node : "-") + "\n";
    }
    return out;
  });
  std::vector<HostInfo> hosts;
  std::istringstream in(text);
  for (HostInfo h; in >> h.name >> h.node;) hosts.push_back(h);
  return hosts;
}

// Simulated seconds for one message of `bytes` from host `from` to host `to`.
inline double transfer_time(const std::string& platform, const std::string& from, const std::string& to,
                            double bytes) {
  const std::string text = run_isolated([&] {
    const Scenario sc = platform_scenario(platform);
    auto engine = probe_engine();
    build_platform(sc.platform, *engine);
    sg4::Host* src = engine->host_by_name(from);
    sg4::Host* dst = engine->host_by_name(to);
    double end = -1;
    sg4::Actor::create("probe", src, [&] {
      sg4::Comm::sendto(src, dst, static_cast<std::uint64_t>(bytes));
      end = sg4::Engine::get_clock();
    });
    engine->run();
    return fmt::format("{:.17g}", end);
  });
  return std::stod(text);
}

// Simulated seconds until the last of several messages of `bytes`, all sent at time 0 (pairs of
// {from, to} host names), under the same alpha-beta settings.
inline double concurrent_transfers_time(const std::string& platform,
                                        const std::vector<std::pair<std::string, std::string>>& pairs,
                                        double bytes) {
  const std::string text = run_isolated([&] {
    const Scenario sc = platform_scenario(platform);
    auto engine = probe_engine();
    build_platform(sc.platform, *engine);
    double end = -1;
    sg4::Actor::create("probe", engine->host_by_name(pairs.front().first), [&] {
      std::vector<sg4::CommPtr> comms;
      for (const auto& [from, to] : pairs)
        comms.push_back(sg4::Comm::sendto_async(engine->host_by_name(from), engine->host_by_name(to),
                                                static_cast<std::uint64_t>(bytes)));
      sg4::Comm::wait_all(comms);
      end = sg4::Engine::get_clock();
    });
    engine->run();
    return fmt::format("{:.17g}", end);
  });
  return std::stod(text);
}

// The value of host property `key` on each host, in natural order ("-" where absent).
inline std::vector<std::string> host_property(const std::string& platform, const std::string& key) {
  const std::string text = run_isolated([&] {
    const Scenario sc = platform_scenario(platform);
    auto engine = probe_engine();
    build_platform(sc.platform, *engine);
    std::string out;
    for (const auto* h : hosts_in_natural_order(*engine)) {
      const char* v = h->get_property(key);
      out += std::string(v ? v : "-") + "\n";
    }
    const char* fabric = engine->get_netzone_root()->get_property(kFabricProperty);
    return out + "fabric=" + (fabric ? fabric : "-") + "\n";
  });
  std::vector<std::string> values;
  std::istringstream in(text);
  for (std::string v; in >> v;) values.push_back(v);
  return values;
}

}  // namespace aggsim::test
