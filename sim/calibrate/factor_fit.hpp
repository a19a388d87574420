#pragma once
// Least-squares fit of one level's piecewise latency and bandwidth factors. For a fixed
// communication pattern a simulated time splits into a part proportional to the route latencies and
// a part proportional to bytes over bandwidth: T = x * latency_part + y * bandwidth_part, where x
// multiplies the latency factor and 1/y the bandwidth factor. Each size step gets the (x, y) that
// minimise the squared relative errors of its points (Eigen's QR), kept positive.
#include <cstdint>
#include <string>
#include <vector>

#include "sim/scenario/calibration.hpp"

namespace aggsim {

struct ProbeRow {
  double message_bytes = 0;
  double measured_s = 0;
  double latency_s = 0;    // part of the simulated time due to latency (at factors of 1)
  double bandwidth_s = 0;  // the rest
};

struct FactorFit {
  FactorTable table;               // one step per edge (from 0), every step filled
  std::vector<int> points;         // measured points per step
  std::vector<std::string> notes;  // what the data could not identify and what was assumed
};

// `edges`: the step boundaries above 0 (increasing). Steps without points copy the nearest
// step that has some. Needs at least one row.
FactorFit fit_factors(const std::vector<ProbeRow>& rows, const std::vector<std::uint64_t>& edges,
                      const std::string& level);

}  // namespace aggsim
