// One unit grammar: every spelling a scenario takes for a bandwidth, latency or speed, a SimGrid
// platform XML takes too, with the same value (and sizes the same as SimGrid's own size parser);
// every spelling SimGrid refuses, the scenario loader refuses with file:line:col and the key.
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <simgrid/Exception.hpp>
#include <simgrid/s4u.hpp>
#include <sstream>
#include <string>
#include <vector>
#include <xbt/parse_units.hpp>

#include "sim/core/error.hpp"
#include "sim/scenario/scenario_loader.hpp"
#include "support/cli.hpp"
#include "support/isolated.hpp"

using namespace aggsim;
using namespace aggsim::test;
namespace sg4 = simgrid::s4u;

namespace {

// Positive spellings of each kind SimGrid takes: prefixes decimal and binary, bits and bytes, every
// time unit, both speed unit forms, exponents, and a bare number (the base unit).
const std::vector<std::string> kBandwidths = {"10Gbps", "25GBps",   "1GiBps", "100MBps", "1.5kbps",
                                              "3Tbps",  "1e3Mbps",  "8bps",   "125",     "2Ebps",
                                              "1Kibps", "0.5GiBps", "7YBps"};
const std::vector<std::string> kDurations = {"1us", "2ms", "0.5s", "3",   "1m",    "1h",
                                             "1d",  "1w",  "10ns", "5ps", "1e-3s", "250us"};
const std::vector<std::string> kSpeeds = {"100Gf", "1Tf", "1.5Pf", "1gigaflops", "5kiloflops", "1Mf",
                                          "42",    "1f",  "2Ef",   "3megaflops", "1Yf"};
const std::vector<std::string> kSizes = {"100MB", "64MiB", "4096", "4096B", "1.5kB", "2GiB",
                                         "1Mb",   "8b",    "1EB",  "3TiB",  "1e6B"};

// Spellings SimGrid's grammar refuses (some of which aggsim took before it used that grammar).
const std::vector<std::string> kRefusedBandwidths = {"1KBps", "10Gbit", "1 Gbps", "1kibps", "1GB", "1gbps"};
const std::vector<std::string> kRefusedDurations = {"1 fortnight", "1sec", "1 ms", "1S", "1Ms"};
const std::vector<std::string> kRefusedSpeeds = {"1Kf", "1Gflops", "1Gif", "1 Gf", "1GF"};
const std::vector<std::string> kRefusedSizes = {"1KB", "10XB", "1 MB", "1kb b", "1mB"};

Scenario scenario_with(const std::string& bandwidth, const std::string& latency, const std::string& speed) {
  return load_scenario_text(fmt::format("ranks: 1\nplatform: {{topology: cluster, hosts: 1, bandwidth: {}, "
                                        "latency: {}, speed: {}}}\nalgorithm: {{name: ring_allreduce}}\n",
                                        bandwidth, latency, speed),
                            "u.yaml");
}

std::string loader_error(const std::string& platform_keys, const std::string& model = "size: 1MB") {
  try {
    load_scenario_text(fmt::format("ranks: 1\nplatform: {{topology: cluster, hosts: 1{}}}\nmodel: {{{}}}\n"
                                   "algorithm: {{name: ring_allreduce}}\n",
                                   platform_keys, model),
                       "u.yaml");
  } catch (const InputError& e) {
    return e.what();
  }
  return "accepted";
}

bool simgrid_refuses(double (*parse)(const std::string&, int, const std::string&, const std::string&),
                     const std::string& text) {
  try {
    parse("x", 1, text, "");
  } catch (const simgrid::ParseError&) {
    return true;
  }
  return false;
}

}  // namespace

TEST_CASE("bandwidths, latencies and speeds read the same in a scenario and in a platform XML", "[units]") {
  // The platform XML: one link per bandwidth and per latency, one host per speed.
  std::string xml =
      "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
      "<platform version=\"4.1\">\n<zone id=\"z\" routing=\"Full\">\n";
  for (std::size_t i = 0; i < kBandwidths.size(); ++i)
    xml += fmt::format("  <link id=\"bw-{}\" bandwidth=\"{}\" latency=\"0s\"/>\n", i, kBandwidths[i]);
  for (std::size_t i = 0; i < kDurations.size(); ++i)
    xml += fmt::format("  <link id=\"lat-{}\" bandwidth=\"1Bps\" latency=\"{}\"/>\n", i, kDurations[i]);
  for (std::size_t i = 0; i < kSpeeds.size(); ++i)
    xml += fmt::format("  <host id=\"host-{}\" speed=\"{}\"/>\n", i, kSpeeds[i]);
  xml += "</zone>\n</platform>\n";
  const auto dir = fresh_dir("units");
  write_file(dir / "units.xml", xml);

  const std::string simgrid_values = run_isolated([&] {
    std::vector<std::string> args = {"units", "--log=root.thres:critical"};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    int argc = static_cast<int>(argv.size());
    argv.push_back(nullptr);
    sg4::Engine engine(&argc, argv.data());
    engine.load_platform((dir / "units.xml").string());
    std::string out;
    for (std::size_t i = 0; i < kBandwidths.size(); ++i)
      out += fmt::format("{:.17g}\n", engine.link_by_name(fmt::format("bw-{}", i))->get_bandwidth());
    for (std::size_t i = 0; i < kDurations.size(); ++i)
      out += fmt::format("{:.17g}\n", engine.link_by_name(fmt::format("lat-{}", i))->get_latency());
    for (std::size_t i = 0; i < kSpeeds.size(); ++i)
      out += fmt::format("{:.17g}\n", engine.host_by_name(fmt::format("host-{}", i))->get_speed());
    return out;
  });
  std::istringstream from_xml(simgrid_values);
  const auto next = [&] {
    std::string line;
    std::getline(from_xml, line);
    return std::stod(line);
  };
  for (const auto& bw : kBandwidths) {
    INFO("bandwidth " << bw);
    CHECK(scenario_with(bw, "1us", "1Gf").platform.params.real("bandwidth") == next());
  }
  for (const auto& lat : kDurations) {
    INFO("latency " << lat);
    CHECK(scenario_with("1Gbps", lat, "1Gf").platform.params.real("latency") == next());
  }
  for (const auto& speed : kSpeeds) {
    INFO("speed " << speed);
    CHECK(scenario_with("1Gbps", "1us", speed).platform.params.real("speed") == next());
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("sizes read the same in a scenario and in SimGrid's size parser", "[units]") {
  for (const auto& size : kSizes) {
    INFO("size " << size);
    const Scenario sc =
        load_scenario_text("ranks: 1\nplatform: {topology: cluster, hosts: 1}\nmodel: {size: " + size +
                               "}\nalgorithm: {name: ring_allreduce}\n",
                           "u.yaml");
    CHECK(static_cast<double>(sc.model.size_bytes) == xbt_parse_get_size("x", 1, size, ""));
  }
}

TEST_CASE("spellings SimGrid refuses are input errors with file:line:col and the key", "[units]") {
  for (const auto& bw : kRefusedBandwidths) {
    INFO("bandwidth " << bw);
    CHECK(simgrid_refuses(xbt_parse_get_bandwidth, bw));
    CHECK(loader_error(", bandwidth: " + bw).find("u.yaml:2:52: platform.bandwidth: '" + bw + "'") == 0);
  }
  for (const auto& lat : kRefusedDurations) {
    INFO("latency " << lat);
    CHECK(simgrid_refuses(xbt_parse_get_time, lat));
    CHECK(loader_error(", latency: " + lat).find("u.yaml:2:50: platform.latency: '" + lat + "'") == 0);
  }
  for (const auto& speed : kRefusedSpeeds) {
    INFO("speed " << speed);
    CHECK(simgrid_refuses(xbt_parse_get_speed, speed));
    CHECK(loader_error(", speed: " + speed).find("u.yaml:2:48: platform.speed: '" + speed + "'") == 0);
  }
  for (const auto& size : kRefusedSizes) {
    INFO("size " << size);
    CHECK(simgrid_refuses(xbt_parse_get_size, size));
    CHECK(loader_error("", "size: " + size).find("u.yaml:3:15: model.size: '" + size + "'") == 0);
  }
}
