#pragma once
// Applies a calibration's piecewise factors to SimGrid's network model through its factor
// callbacks (NetworkModelIntf), choosing the intra- or inter-node table by whether both hosts carry
// the same aggsim_node property.
#include <optional>
#include <simgrid/s4u/Engine.hpp>

#include "algorithms/calibration_capability.hpp"
#include "sim/scenario/scenario.hpp"

namespace aggsim {

// Call once the platform is loaded and before the simulation runs with what the run receives of
// its calibration (AlgorithmConfig::calibration; null: none); one without factor tables leaves the
// network model's own factors in place.
void install_network_factors(simgrid::s4u::Engine& engine, const std::shared_ptr<const RunCalibration>& cal);

// SimGrid's LV08 factors (a calibration of TCP over Ethernet, Velho and Legrand 2009).
constexpr double kLv08LatencyFactor = 13.01;
constexpr double kLv08BandwidthFactor = 0.97;

// `network: auto` on an ethernet fabric runs LV08, whose factors belong to the links between nodes
// only: transfers between two GPUs of one node (same aggsim_node) keep the platform's latency and
// bandwidth as written. Call once the platform is loaded.
void install_fabric_factors(simgrid::s4u::Engine& engine);

// Every transfer of the run without latency (AlgorithmRun::pieces_pay_latency); call after the
// other factors are installed: their bandwidth factors stay.
void install_zero_latency(simgrid::s4u::Engine& engine);

// Transfers a rank marks (Comm::charge_latency_at_receiver) without latency, every other one with
// the factor installed before (or the model's own); call after the other factors. Where SimGrid
// takes no callback (a user's --cfg=network/latency-factor) nothing changes and
// receiver_latency::available() stays false; so on a model other than CM02 and LV08 without an
// installed factor (their own may depend on the size).
void install_receiver_latency(simgrid::s4u::Engine& engine);
// A new run: no factor installed yet, no marks (call before any install_*).
void forget_installed_factors();

// The latency and bandwidth factors a transfer between two hosts gets from the scenario's network
// (1 and 1 where the platform's values hold as written), for reports; nullopt when they depend on
// the size (the run's calibration `cal` has factor tables) or no factor applies (ns-3 simulates
// packets).
struct RouteFactors {
  double latency = 1;
  double bandwidth = 1;
};
std::optional<RouteFactors> route_factors(const Scenario& sc, const RunCalibration* cal, bool same_node);

}  // namespace aggsim
