#pragma once
// Measured beside simulated: nccl-tests' columns (size, time, algbw, busbw) for both, the relative
// error of each point and the geometric mean of the absolute errors (the figure ASTRA-sim reports).
#include <string>
#include <vector>

#include "sim/calibrate/measurement.hpp"

namespace aggsim {

struct ComparedPoint {
  Measurement measured;
  double simulated_s = 0;
  double rel_error() const { return (simulated_s - measured.time_s) / measured.time_s; }
};

// Geometric mean of |rel_error|, each floored at 1e-4 so an exact point does not zero the mean.
double geometric_mean_error(const std::vector<ComparedPoint>& points);

// One block per (collective, ranks, nodes), rows in the order given.
std::string comparison_table(const std::vector<ComparedPoint>& points);

// Header collective,ranks,nodes,bytes,measured_s,simulated_s,rel_error.
std::string comparison_csv(const std::vector<ComparedPoint>& points);

}  // namespace aggsim
