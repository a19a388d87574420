#pragma once
// What every user of NCCL's communicator needs from the platform before its first call, defined
// with nccl_allreduce (nccl_allreduce.cpp) and shared with the algorithms that run NCCL's
// collectives for their own steps (fsdp's collectives: nccl).
#include <simgrid/s4u.hpp>
#include <vector>

#include "algorithms/nccl/nccl_communicator.hpp"

namespace aggsim {

// The GPU generation the ranks' hosts declare (platform.gpu, host property aggsim_gpu); Hopper when
// they declare none. Throws ParamError("gpu") when they declare two.
GpuArch platform_arch(const std::vector<sg4::Host*>& hosts);

}  // namespace aggsim
