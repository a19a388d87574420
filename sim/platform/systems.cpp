#include "sim/platform/systems.hpp"

namespace aggsim {

namespace {

// The keys of a node of 8 GPUs on NVSwitch with 8 NICs (one per GPU), as the DGX and HGX boards are.
std::vector<std::pair<std::string, std::string>> eight_gpu_node(const char* gpu, const char* nvlink,
                                                                bool reduces, const char* nic) {
  return {{"gpus_per_node", "8"},      {"gpu", gpu},
          {"intra_bandwidth", nvlink}, {"nvswitch", reduces ? "true" : "false"},
          {"nics_per_node", "8"},      {"nic_bandwidth", nic},
          {"bandwidth", nic}};
}

// A rack of 18 compute trays of 4 GPUs in one NVLink domain, each tray with 4 NICs (one per GPU): the
// GB200 and GB300 NVL72. `nodes` counts trays, as Slurm and NCCL do.
std::vector<std::pair<std::string, std::string>> nvl72_tray(const char* nic) {
  return {{"gpus_per_node", "4"}, {"gpu", "blackwell"},   {"intra_bandwidth", "900GBps"},
          {"nvswitch", "true"},   {"nvlink_domain", "18"}, {"nics_per_node", "4"},
          {"nic_bandwidth", nic}, {"bandwidth", nic}};
}

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
        "src/transport/nvls.cc"}},
      {"dgx_h100",
       "NVIDIA DGX H100: 8 H100 SXM5 on NVSwitch with NVLS (NVLink 4), 8 x 400 Gb/s NDR InfiniBand",
       eight_gpu_node("hopper", "450GBps", true, "400Gbps"),
       "infiniband",
       {"NVIDIA DGX H100/H200 User Guide, Introduction to the NVIDIA DGX H100/H200 Systems: 8 x H100, 4 "
        "NVSwitches, 900 GB/s GPU-to-GPU bidirectional (18 NVLink 4 links), 8 x ConnectX-7 400 Gb/s "
        "InfiniBand/Ethernet on 4 OSFP ports for the compute fabric; "
        "https://docs.nvidia.com/dgx/dgxh100-user-guide/introduction-to-dgxh100.html"}},
      {"hgx_h200",
       "NVIDIA HGX H200 8-GPU: 8 H200 SXM on NVSwitch with NVLS (NVLink 4), 8 x 400 Gb/s InfiniBand",
       eight_gpu_node("hopper", "450GBps", true, "400Gbps"),
       "infiniband",
       {"NVIDIA H200 Tensor Core GPU data sheet: H200 SXM, NVLink 900 GB/s, HGX H200 with 4 or 8 GPUs; "
        "https://www.nvidia.com/en-us/data-center/h200/",
        "NVIDIA DGX H100/H200 User Guide (the DGX H200 is this board): 8 x ConnectX-7 400 Gb/s for the "
        "compute fabric; https://docs.nvidia.com/dgx/dgxh100-user-guide/introduction-to-dgxh100.html"}},
      {"dgx_b200",
       "NVIDIA DGX B200: 8 B200 on NVSwitch with NVLS (NVLink 5), 8 x 400 Gb/s InfiniBand",
       eight_gpu_node("blackwell", "900GBps", true, "400Gbps"),
       "infiniband",
       {"NVIDIA DGX B200 User Guide, Introduction to NVIDIA DGX B200: 8 x B200, 2 NVSwitch chips, 1.8 TB/s "
        "GPU-to-GPU bandwidth per GPU (NVLink 5, both directions), 8 x single-port ConnectX-7 VPI 400 Gb/s "
        "on 4 OSFP ports for the compute fabric; "
        "https://docs.nvidia.com/dgx/dgxb200-user-guide/introduction-to-dgxb200.html"}},
      {"gb200_nvl72",
       "NVIDIA GB200 NVL72: racks of 18 trays x 4 B200 in one NVLink 5 domain with NVLS, 4 x 400 Gb/s "
       "InfiniBand a tray; nodes counts trays (a multiple of 18)",
       nvl72_tray("400Gbps"),
       "infiniband",
       {"NVIDIA DGX GB200 User Guide, Hardware: 72-GPU NVL domains of 18 compute trays (2 Grace CPUs, 4 "
        "Blackwell GPUs each) and 9 NVLink switch trays; a compute tray's cluster network is 4 x ConnectX-7 "
        "single-port 400G OSFP; https://docs.nvidia.com/dgx/dgxgb200-user-guide/hardware.html",
        "NVIDIA GB200 NVL72: 1.8 TB/s NVLink 5 per GPU (both directions), 130 TB/s over the 72 GPUs; "
        "https://www.nvidia.com/en-us/data-center/gb200-nvl72/",
        "NCCL 2.30.7 fuses the trays of one NVLink clique into one topology and counts the clique as one "
        "node (src/graph/topo.cc, multi-node NVLink), with 24 NVLS channels inside one domain and 32 "
        "across domains on Blackwell (src/transport/nvls.cc)"}},
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
        "Blackwell Ultra runs NCCL's Blackwell (sm100 family) constants: NCCL 2.30.7 src/graph/tuning.cc"}},
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
