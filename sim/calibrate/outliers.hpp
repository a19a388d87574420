#pragma once
// Measured points a calibration should not follow: within one run (one file, collective and shape) a
// collective's time grows with its size, so a point slower than a larger size of the same run by
// more than the run's noise (kMonotonicTolerance) is an artefact (a warm-up, another job, a network
// plugin's slow protocol at some sizes), not what the machine does; each is named with the fastest
// larger size. An artefact slows a point down: a point faster than a smaller one is kept (that one
// is the outlier).
#include <cstddef>
#include <string>
#include <vector>

#include "sim/calibrate/measurement.hpp"

namespace aggsim {

// A later (larger) size may be this much faster than an earlier one before either counts as an
// outlier: the run-to-run noise of nccl-tests' small sizes, and NCCL's switch of protocol.
inline constexpr double kMonotonicTolerance = 0.10;

struct MonotonicOutlier {
  std::size_t index = 0;  // into the measurements
  std::string why;        // "slower than 2097152 (226.8 us)"
};

// The outliers of each run among `measured`, in the order of `measured`.
std::vector<MonotonicOutlier> monotonic_outliers(const std::vector<Measurement>& measured);

// "1048576: 317 us, slower than 2097152 (226.8 us)": a point as the calibration's report lists it.
std::string outlier_line(const Measurement& m, const std::string& why);

}  // namespace aggsim
