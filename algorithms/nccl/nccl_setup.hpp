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

// Whether `streams: auto` merges each pair's channel streams into one: only where SimGrid grants
// every stream its paced rate in full, so that a merged stream ends when its channels' would (up to
// rounding): the alpha_beta network (CM02, no reverse traffic, a TCP window that bounds nothing, no
// bandwidth factor), no calibration factor tables (they depend on the message size), and no other
// group's calls on the links (`one_group`). Under LV08 a link's 0.97 share is below the streams' pace
// and max-min sharing splits it by stream: merged streams would change the times.
bool nccl_streams_merge(bool calibration_factors, bool one_group);

}  // namespace aggsim
