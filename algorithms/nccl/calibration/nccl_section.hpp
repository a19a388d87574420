#pragma once
// The calibration file's `nccl:` section: NCCL's protocol costs as nccl_allreduce's fit leaves them
// (hop latency per link class and protocol, protocol efficiency, NVLS efficiency, one scale of the
// base latencies) and the names of the parameters the data identified.
#include <memory>
#include <string>
#include <vector>

#include "algorithms/calibration_capability.hpp"

namespace aggsim {

inline constexpr const char* kNcclSection = "nccl";

std::shared_ptr<const ModelParameters> read_nccl_section(SectionReader& section, std::vector<std::string>& identified);

// False when `parameters` are not NCCL's protocol costs.
bool write_nccl_section(SectionWriter& out, const ModelParameters& parameters, const std::vector<std::string>& identified);

}  // namespace aggsim
