#include "sim/platform/systems.hpp"

#include <fmt/format.h>

#include "sim/platform/platform_spec.hpp"

namespace aggsim {

namespace {

// What an NVLink of the generation carries as data, NCCL's own figure per link over the link's
// signalling rate (nccl_nvlink_figure, kNvlinkShareSource): 0.8, 0.824, 0.802.
std::string nvlink_share(const char* gpu) {
  const NvlinkFigure f = nccl_nvlink_figure(*kGpuNames.find(gpu));
  return fmt::format("{:.4g}", f.nccl_GBps / f.link_GBps);
}

const char* const kNvlinkShareSource =
    "NVLink's data share (nvlink_efficiency), NCCL's own figure of what one NVLink carries over the link's "
    "rate each way: src/graph/topo.h (NCCL 2.30.7) SM80_NVLINK_BW 20.0 and SM90_NVLINK_BW 20.6 GB/s per "
    "NVLink 3 or 4 link of 25 GB/s, SM100_NVLINK_BW 40.1 per NVLink 5 link of 50; published one-node DGX "
    "A100 all-reduce runs reach 230 - 235 GB/s busbw of the 240 it leaves (tests/data/README.md)";

// The keys of a node of 8 GPUs on NVSwitch with 8 NICs (one per GPU), as the DGX and HGX boards are.
std::vector<std::pair<std::string, std::string>> eight_gpu_node(const char* gpu, const char* nvlink,
                                                                bool reduces, const char* nic) {
  return {{"gpus_per_node", "8"},      {"gpu", gpu},
          {"intra_bandwidth", nvlink}, {"nvlink_efficiency", nvlink_share(gpu)},
          {"nvswitch", reduces ? "true" : "false"},
          {"nics_per_node", "8"},      {"nic_bandwidth", nic},
          {"bandwidth", nic}};
}

// A rack of 18 compute trays of 4 GPUs in one NVLink domain, each tray with 4 NICs (one per GPU): the
// GB200 and GB300 NVL72. `nodes` counts trays, as Slurm and NCCL do. `extra`: keys of one system.
std::vector<std::pair<std::string, std::string>> nvl72_tray(
    const char* nic, std::vector<std::pair<std::string, std::string>> extra = {}) {
  std::vector<std::pair<std::string, std::string>> keys = {
      {"gpus_per_node", "4"}, {"gpu", "blackwell"},   {"intra_bandwidth", "900GBps"},
      {"nvlink_efficiency", nvlink_share("blackwell")},
      {"nvswitch", "true"},   {"nvlink_domain", "18"}, {"nics_per_node", "4"},
      {"nic_bandwidth", nic}, {"bandwidth", nic}};
  keys.insert(keys.end(), extra.begin(), extra.end());
  return keys;
}

// An AMD Instinct platform of 8 OAM GPUs in a full xGMI mesh (7 links each, one per peer), each GPU
// with its PCIe Gen 5 x16 link (64 GB/s each way) to its own 400 Gb/s NIC, as the MI300X and MI325X
// nodes are built. The mesh's links at the rate AMD measures usable (48 GB/s of the data sheets' 64
// each way): the data sheets' peak would put one node's ring 40 % above every published run.
std::vector<std::pair<std::string, std::string>> instinct_node() {
  return {{"gpus_per_node", "8"},       {"gpu", "cdna3"},
          {"intra_link", "xgmi"},       {"xgmi_bandwidth", "48GBps"},
          {"intra_bandwidth", "64GBps"}, {"nics_per_node", "8"},
          {"nic_bandwidth", "400Gbps"}, {"bandwidth", "400Gbps"}};
}

const char* const kXgmiUsableSource =
    "AMD ROCm blog, Understanding RCCL Bandwidth and xGMI Performance on AMD Instinct MI300X (2025-03-02): "
    "each GPU joins its seven peers by xGMI links rated 64 GB/s each point to point, of which CRC and "
    "protocol overhead leave about 48 GB/s usable; "
    "https://rocm.blogs.amd.com/software-tools-optimization/mi300x-rccl-xgmi/README.html";
const char* const kInstinctNicSource =
    "NICs, one 400 Gb/s NIC per GPU as the nodes are typically built: Microsoft Azure ND MI300X v5 "
    "(8 x MI300X, InfiniBand 8 x 400 Gb/s NDR), "
    "https://learn.microsoft.com/azure/virtual-machines/sizes/gpu-accelerated/nd-mi300x-v5-series; ROCm "
    "docs, vLLM distributed inference with MoRI (8 x MI300X/MI325X and 8 x ConnectX-7 a node, one per "
    "GPU), https://rocm.docs.amd.com/en/latest/how-to/rocm-for-ai/inference/benchmark-docker/"
    "vllm-mori-distributed.html; RoCE as AMD's own MI300X and MI325X clusters run it (tests/data/README.md)";
const char* const kRcclMeshSource =
    "RCCL 2.21.5 (ROCm 6.3) counts xGMI as NVLink, runs no NVLS, keeps LL128 off on gfx942 and tunes 8-GPU "
    "MI300X nodes with its tuning model 5 (ROCm/rccl src/graph/tuning.cc, src/graph/rome_models.cc)";

// NVLink rates are per direction: the vendors quote both directions together (900 GB/s for NVLink 4
// is 450 GB/s each way). NICs: the compute NICs only (the storage and management ports are apart).
std::vector<SystemInfo> make_systems() {
  return {
      {"dgx_a100",
       "NVIDIA DGX A100: 8 A100 SXM4 on NVSwitch (NVLink 3, no NVLS), 8 x 200 Gb/s HDR InfiniBand",
       eight_gpu_node("ampere", "300GBps", false, "200Gbps"),
       "infiniband",
       {"NVIDIA DGX A100 User Guide, Introduction to the NVIDIA DGX A100 System: 8 x A100, 6 NVSwitches, "
        "600 GB/s GPU-to-GPU bidirectional, 8 x single-port ConnectX-6 VPI 200 Gb/s HDR InfiniBand for the "
        "cluster network; https://docs.nvidia.com/dgx/dgxa100-user-guide/introduction-to-dgxa100.html",
        "NVSwitch of the A100 generation forwards without reducing (NVLS needs Hopper): NCCL 2.30.7 "
        "src/transport/nvls.cc", kNvlinkShareSource}},
      {"dgx_h100",
       "NVIDIA DGX H100: 8 H100 SXM5 on NVSwitch with NVLS (NVLink 4), 8 x 400 Gb/s NDR InfiniBand",
       eight_gpu_node("hopper", "450GBps", true, "400Gbps"),
       "infiniband",
       {"NVIDIA DGX H100/H200 User Guide, Introduction to the NVIDIA DGX H100/H200 Systems: 8 x H100, 4 "
        "NVSwitches, 900 GB/s GPU-to-GPU bidirectional (18 NVLink 4 links), 8 x ConnectX-7 400 Gb/s "
        "InfiniBand/Ethernet on 4 OSFP ports for the compute fabric; "
        "https://docs.nvidia.com/dgx/dgxh100-user-guide/introduction-to-dgxh100.html", kNvlinkShareSource}},
      {"hgx_h200",
       "NVIDIA HGX H200 8-GPU: 8 H200 SXM on NVSwitch with NVLS (NVLink 4), 8 x 400 Gb/s InfiniBand",
       eight_gpu_node("hopper", "450GBps", true, "400Gbps"),
       "infiniband",
       {"NVIDIA H200 Tensor Core GPU data sheet: H200 SXM, NVLink 900 GB/s, HGX H200 with 4 or 8 GPUs; "
        "https://www.nvidia.com/en-us/data-center/h200/",
        "NVIDIA DGX H100/H200 User Guide (the DGX H200 is this board): 8 x ConnectX-7 400 Gb/s for the "
        "compute fabric; https://docs.nvidia.com/dgx/dgxh100-user-guide/introduction-to-dgxh100.html", kNvlinkShareSource}},
      {"dgx_b200",
       "NVIDIA DGX B200: 8 B200 on NVSwitch with NVLS (NVLink 5), 8 x 400 Gb/s InfiniBand",
       eight_gpu_node("blackwell", "900GBps", true, "400Gbps"),
       "infiniband",
       {"NVIDIA DGX B200 User Guide, Introduction to NVIDIA DGX B200: 8 x B200, 2 NVSwitch chips, 1.8 TB/s "
        "GPU-to-GPU bandwidth per GPU (NVLink 5, both directions), 8 x single-port ConnectX-7 VPI 400 Gb/s "
        "on 4 OSFP ports for the compute fabric; "
        "https://docs.nvidia.com/dgx/dgxb200-user-guide/introduction-to-dgxb200.html", kNvlinkShareSource}},
      {"gb200_nvl72",
       "NVIDIA GB200 NVL72: racks of 18 trays x 4 B200 in one NVLink 5 domain with NVLS, 4 x 400 Gb/s "
       "InfiniBand a tray; nodes counts trays (a multiple of 18)",
       nvl72_tray("400Gbps", {{"gpu_nic_path", "phb"}}),
       "infiniband",
       {"NVIDIA DGX GB200 User Guide, Hardware: 72-GPU NVL domains of 18 compute trays (2 Grace CPUs, 4 "
        "Blackwell GPUs each) and 9 NVLink switch trays; a compute tray's cluster network is 4 x ConnectX-7 "
        "single-port 400G OSFP; https://docs.nvidia.com/dgx/dgxgb200-user-guide/hardware.html",
        "The NICs hang off the Grace CPUs, which the GPUs reach over NVLink-C2C: NCCL's path from a GPU to "
        "its NIC is PHB (NCCL User Guide, NCCL_NET_GDR_C2C: \"a NIC attached to a CPU (i.e. distance PHB) "
        "where the CPU is connected to the GPU via a C2C interconnect\"; src/graph/paths.cc, NCCL 2.26.2), "
        "so NCCL 2.25 and 2.26 keep LL128 inside a rack only (src/graph/tuning.cc: up to PXN); "
        "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html#nccl-net-gdr-c2c",
        "NVIDIA GB200 NVL72: 1.8 TB/s NVLink 5 per GPU (both directions), 130 TB/s over the 72 GPUs; "
        "https://www.nvidia.com/en-us/data-center/gb200-nvl72/",
        "NCCL 2.30.7 fuses the trays of one NVLink clique into one topology and counts the clique as one "
        "node (src/graph/topo.cc, multi-node NVLink), with 24 NVLS channels inside one domain and 32 "
        "across domains on Blackwell (src/transport/nvls.cc)", kNvlinkShareSource}},
      {"gb300_nvl72",
       "NVIDIA GB300 NVL72: racks of 18 trays x 4 Blackwell Ultra in one NVLink 5 domain with NVLS, 4 x "
       "800 Gb/s ConnectX-8 a tray; nodes counts trays (a multiple of 18)",
       nvl72_tray("800Gbps"),
       "infiniband",
       {"NVIDIA Enterprise Reference Architecture, NVL72 AI factory, System Hardware & Components: the "
        "GB300 NVL72 rack has 9 NVSwitch trays joining all 72 Blackwell Ultra GPUs (130 TB/s), compute "
        "trays of 4 GPUs and 2 Grace CPUs with 4 ConnectX-8 HCAs each; "
        "https://docs.nvidia.com/enterprise-reference-architectures/nvl72-ai-factory/latest/components.html",
        "NVIDIA ConnectX-8 SuperNIC: up to 800 Gb/s per port; "
        "https://www.nvidia.com/en-us/networking/products/ethernet/supernic/",
        "NVIDIA GB300 NVL72: NVLink 5, 1.8 TB/s per GPU (both directions); "
        "https://www.nvidia.com/en-us/data-center/gb300-nvl72/",
        "Blackwell Ultra runs NCCL's Blackwell (sm100 family) constants: NCCL 2.30.7 src/graph/tuning.cc", kNvlinkShareSource}},
      {"mi300x",
       "AMD Instinct MI300X platform: 8 MI300X (CDNA 3) in a full xGMI mesh, no switch, 8 x 400 Gb/s NICs",
       instinct_node(),
       "roce",
       {"AMD Instinct MI300X data sheet: 7 AMD Infinity Fabric links, peak Infinity Fabric link bandwidth "
        "128 GB/s (both directions), PCIe Gen 5 x16 128 GB/s; AMD Instinct MI300X Platform: 8 GPUs fully "
        "connected by Infinity Fabric; https://www.amd.com/en/products/accelerators/instinct/mi300/mi300x.html",
        kXgmiUsableSource, kInstinctNicSource, kRcclMeshSource}},
      {"mi325x",
       "AMD Instinct MI325X platform: 8 MI325X (CDNA 3) in a full xGMI mesh, no switch, 8 x 400 Gb/s NICs",
       instinct_node(),
       "roce",
       {"AMD Instinct MI325X data sheet: 7 AMD Infinity Fabric links, peak Infinity Fabric link bandwidth "
        "128 GB/s (both directions), PCIe Gen 5 x16; AMD Instinct MI325X Platform: 8 GPUs fully connected; "
        "https://www.amd.com/en/products/accelerators/instinct/mi300/mi325x.html",
        kXgmiUsableSource, kInstinctNicSource, kRcclMeshSource}},
  };
}

}  // namespace

const std::vector<SystemInfo>& system_table() {
  static const std::vector<SystemInfo> systems = make_systems();
  return systems;
}

const SystemInfo* find_system(const std::string& name) {
  for (const SystemInfo& s : system_table())
    if (s.name == name) return &s;
  return nullptr;
}

}  // namespace aggsim
