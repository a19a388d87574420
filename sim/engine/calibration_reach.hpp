#pragma once
// Whether a calibration reaches what a run asks of it: the link classes its measured points
// crossed (inside a node, between nodes) and the fabric between nodes they ran on. A class the
// data never crossed keeps the platform's values (or NCCL's defaults): the prediction there is
// an extrapolation, reported as a warning. Another fabric under `network: auto` swaps the network
// model the factors were fitted on (ethernet is LV08's TCP calibration, infiniband and roce are
// latency + size / bandwidth), so the fitted numbers mean nothing there: an input error.
#include <string>
#include <vector>

#include "algorithms/calibration_capability.hpp"
#include "sim/api/rank_layout.hpp"
#include "sim/scenario/scenario.hpp"

namespace aggsim {

// Warnings ("file:line:col: calibration: ...") for the run of `sc` on ranks placed as `layout`,
// `cal` what it receives of its calibration (null: none); throws InputError when the calibration's
// fabric gives another network model than the run's.
std::vector<std::string> calibration_reach_warnings(const Scenario& sc, const RunCalibration* cal,
                                                    const RankLayout& layout);

}  // namespace aggsim
