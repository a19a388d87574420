#pragma once
// AMD Instinct nodes (`intra_link: xgmi`): the GPUs of a node joined by a full mesh of xGMI
// (Infinity Fabric) links, one per GPU pair at xgmi_bandwidth each way, with no switch; each GPU
// keeps its own link (intra_bandwidth, PCIe) towards its NIC. A node of g GPUs has g(g-1)/2 links.
#include <cstdint>
#include <string>

#include "sim/core/params.hpp"
#include "sim/platform/platform_spec.hpp"

namespace aggsim {

// The default per-link rate: an MI300X Infinity Fabric link as AMD measures it usable (48 GB/s of
// its 64 GB/s peak each way; platforms/README.md names the sources).
constexpr double kDefaultXgmiBandwidth = 48e9;

// Decodes xgmi_bandwidth into `shape` and refuses what a mesh cannot be, naming the key: a mesh of
// one GPU, a mesh with a switch that reduces (nvswitch), an NVIDIA GPU generation on a mesh,
// xgmi_bandwidth without intra_link xgmi. (nvlink_domain refuses xgmi itself.) A mesh whose `gpu` is
// not given is cdna3.
void check_xgmi_mesh(NodeShape& shape, const Params& params);

// Name of the xGMI link between GPUs a < b of `node`.
std::string xgmi_link_name(std::int64_t node, std::int64_t a, std::int64_t b);

}  // namespace aggsim
