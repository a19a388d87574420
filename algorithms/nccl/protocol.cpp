#include "algorithms/nccl/protocol.hpp"

namespace aggsim {

const char* protocol_name(Protocol p) {
  switch (p) {
    case Protocol::ll:
      return "ll";
    case Protocol::ll128:
      return "ll128";
    case Protocol::simple:
      return "simple";
  }
  return "?";
}

const char* nccl_algorithm_name(NcclAlgorithm a) {
  switch (a) {
    case NcclAlgorithm::tree:
      return "tree";
    case NcclAlgorithm::ring:
      return "ring";
    case NcclAlgorithm::nvls:
      return "nvls";
    case NcclAlgorithm::nvls_tree:
      return "nvls_tree";
    case NcclAlgorithm::pat:
      return "pat";
  }
  return "?";
}

std::optional<NcclAlgorithm> nccl_algorithm_named(const std::string& name) {
  for (NcclAlgorithm a : kNcclAlgorithms)
    if (name == nccl_algorithm_name(a)) return a;
  return std::nullopt;
}

std::optional<Protocol> protocol_named(const std::string& name) {
  for (Protocol p : kProtocols)
    if (name == protocol_name(p)) return p;
  return std::nullopt;
}

NcclPlacement nccl_placement(NcclAlgorithm a, int nodes, const NvlsHardware& hardware) {
  if (!is_nvls(a)) return NcclPlacement::runs;
  if (!hardware.nvswitch) return NcclPlacement::needs_switch;
  if (!hardware.gpu_multicast) return NcclPlacement::needs_nvls_gpu;
  if (hardware.smallest_node <= 2) return NcclPlacement::needs_three_gpus;
  if (a == NcclAlgorithm::nvls && nodes > 1) return NcclPlacement::nvls_spans_nodes;
  if (a == NcclAlgorithm::nvls_tree && nodes == 1) return NcclPlacement::nvls_tree_on_one_node;
  return NcclPlacement::runs;
}

bool nccl_protocol_runs(NcclAlgorithm a, Protocol p) {
  return p == Protocol::simple || (!is_nvls(a) && a != NcclAlgorithm::pat);
}

ProtocolCosts ProtocolCosts::nccl_defaults() {
  ProtocolCosts c;
  constexpr double us = 1e-6;
  // hwLat's Ring rows (LL, LL128, Simple): the per-hop cost NCCL assumes for a pipelined piece.
  c.hop_latency_s = {{{0.6 * us, 1.9 * us, 3.4 * us},     // NVLink
                      {1.0 * us, 2.5 * us, 5.7 * us},     // PCIe
                      {2.7 * us, 4.0 * us, 14.0 * us}}};  // network
  c.efficiency = {0.5, 0.92, 1.0};
  // baseLat (Tree, Ring; NVLS and NVLS-Tree have none, their hops carry it); PAT's 8 us base time
  // (NCCL 2.23.4's PAT latency, src/graph/tuning.cc; Simple only).
  c.base_latency_s = {{{6.8 * us, 14.0 * us, 0.0},
                       {6.6 * us, 14.0 * us, 8.4 * us},
                       {0.0, 0.0, 0.0},
                       {0.0, 0.0, 0.0},
                       {0.0, 0.0, 8.0 * us}}};
  c.nvls_hop_latency_s = 25.0 * us;  // hwLat[NVLink][NVLS][Simple]
  c.nvls_head_latency_s = kNvlsHeadCallSeconds;
  c.nvls_efficiency = kHopperNvlsEfficiency;
  return c;
}

bool NcclProtocolParameters::same_as(const ModelParameters& other) const {
  const ProtocolCosts* o = fitted_protocol_costs(&other);
  return o && o->hop_latency_s == costs.hop_latency_s && o->efficiency == costs.efficiency &&
         o->base_latency_s == costs.base_latency_s && o->nvls_hop_latency_s == costs.nvls_hop_latency_s &&
         o->nvls_head_latency_s == costs.nvls_head_latency_s && o->nvls_efficiency == costs.nvls_efficiency;
}

const ProtocolCosts* fitted_protocol_costs(const ModelParameters* model) {
  const auto* nccl = dynamic_cast<const NcclProtocolParameters*>(model);
  return nccl ? &nccl->costs : nullptr;
}

ProtocolCosts protocol_costs_of(const std::shared_ptr<const RunCalibration>& calibration) {
  const ProtocolCosts* fitted = calibration ? fitted_protocol_costs(calibration->model.get()) : nullptr;
  return fitted ? *fitted : ProtocolCosts::nccl_defaults();
}

}  // namespace aggsim
