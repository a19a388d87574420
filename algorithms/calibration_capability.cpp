#include "algorithms/calibration_capability.hpp"

#include <fmt/format.h>

#include "sim/core/error.hpp"

namespace aggsim {

CalibrationCapability factor_step_calibration() {
  CalibrationCapability capability;
  capability.plan = message_level_plan;
  return capability;
}

CollectivePlan message_level_plan(const std::string& collective, int ranks, std::uint64_t bytes,
                                  const std::string& source) {
  CollectivePlan plan;
  const double per_rank = static_cast<double>(bytes) / ranks;
  if (collective == "all_reduce") {
    plan = {{}, bytes, 1, per_rank};
  } else if (collective == "all_gather") {
    plan = {{"algorithm={name: allgather}"}, bytes / static_cast<std::uint64_t>(ranks), 1, per_rank};
  } else if (collective == "reduce_scatter") {
    plan = {{"algorithm={name: ring_allreduce}"}, bytes, 2, per_rank};
  } else if (collective == "sendrecv") {
    plan = {{"algorithm={name: allgather}"}, bytes, static_cast<double>(ranks - 1), static_cast<double>(bytes)};
  } else {
    throw InputError(
        fmt::format("{}: {}: only nccl_allreduce (its collective: broadcast) simulates it (other "
                    "algorithms: use all_reduce, all_gather, reduce_scatter or sendrecv measurements)",
                    source, collective));
  }
  return plan;
}

bool same_calibration(const std::shared_ptr<const RunCalibration>& a, const std::shared_ptr<const RunCalibration>& b) {
  const ModelParameters* x = a ? a->model.get() : nullptr;
  const ModelParameters* y = b ? b->model.get() : nullptr;
  if (!x || !y) return x == y;
  return x->same_as(*y);
}

}  // namespace aggsim
