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
  std::string choice;  // the NCCL algorithm/protocol simulated ("ring/simple"), if any
  int in_measured_range =
      -1;  // 1/0: the size lies inside the scenario calibration's measured sizes; -1: no calibration
  int choice_observed = -1;  // 1/0: that choice was seen in the calibration's data; -1: unknown
  double rel_error() const { return (simulated_s - measured.time_s) / measured.time_s; }
};

// Geometric mean of |rel_error|, each floored at 1e-4 so an exact point does not zero the mean.
double geometric_mean_error(const std::vector<ComparedPoint>& points);

// One block per (collective, ranks, nodes), rows in the order given.
std::string comparison_table(const std::vector<ComparedPoint>& points);

// Header collective,ranks,nodes,bytes,measured_s,simulated_s,rel_error,choice,in_measured_range,
// choice_observed (the last two empty without a calibration that records them).
std::string comparison_csv(const std::vector<ComparedPoint>& points);

}  // namespace aggsim
