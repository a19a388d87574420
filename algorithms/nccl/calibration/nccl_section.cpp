#include "algorithms/nccl/calibration/nccl_section.hpp"

#include "algorithms/nccl/protocol.hpp"

namespace aggsim {

namespace {
const char* const kClassKeys[] = {"nvlink", "pcie", "network"};
const char* const kProtocolKeys[] = {"ll", "ll128", "simple"};
}  // namespace

std::shared_ptr<const ModelParameters> read_nccl_section(SectionReader& map, std::vector<std::string>& identified) {
  ProtocolCosts c = ProtocolCosts::nccl_defaults();
  if (auto classes = map.map("hop_latency_us")) {
    for (int k = 0; k < 3; ++k)
      if (auto protocols = classes->map(kClassKeys[k])) {
        for (int p = 0; p < 3; ++p)
          if (auto v = protocols->real(kProtocolKeys[p], 0, 1e6))
            c.hop_latency_s[static_cast<std::size_t>(k)][static_cast<std::size_t>(p)] = *v * 1e-6;
        protocols->finish();
      }
    classes->finish();
  }
  if (auto protocols = map.map("efficiency")) {
    for (int p = 0; p < 3; ++p)
      if (auto v = protocols->real(kProtocolKeys[p], 1e-3, 1)) c.efficiency[static_cast<std::size_t>(p)] = *v;
    protocols->finish();
  }
  if (auto nvls = map.real("nvls_efficiency", 1e-3, 2)) c.nvls_efficiency = *nvls;
  if (auto scale = map.real("base_latency_scale", 0, 1e4)) {
    for (auto& row : c.base_latency_s)
      for (double& b : row) b *= *scale;
    c.nvls_hop_latency_s *= *scale;
    c.nvls_head_latency_s *= *scale;
  }
  if (auto ids = map.words("identified", "parameter names")) identified.insert(identified.end(), ids->begin(), ids->end());
  map.finish();
  return std::make_shared<NcclProtocolParameters>(c);
}

bool write_nccl_section(SectionWriter& out, const ModelParameters& parameters, const std::vector<std::string>& identified) {
  const ProtocolCosts* costs = fitted_protocol_costs(&parameters);
  if (!costs) return false;
  const ProtocolCosts& c = *costs;
  const ProtocolCosts d = ProtocolCosts::nccl_defaults();
  out.begin_map(kNcclSection, false);
  out.begin_map("hop_latency_us", false);
  for (int k = 0; k < 3; ++k) {
    out.begin_map(kClassKeys[k], true);
    for (int p = 0; p < 3; ++p)
      out.number(kProtocolKeys[p], c.hop_latency_s[static_cast<std::size_t>(k)][static_cast<std::size_t>(p)] * 1e6);
    out.end_map();
  }
  out.end_map();
  out.begin_map("efficiency", true);
  for (int p = 0; p < 3; ++p) out.number(kProtocolKeys[p], c.efficiency[static_cast<std::size_t>(p)]);
  out.end_map();
  out.number("nvls_efficiency", c.nvls_efficiency);
  // NCCL's base latencies keep their ratios; one scale is fitted.
  const double scale = d.base(NcclAlgorithm::ring, Protocol::simple) > 0
                           ? c.base(NcclAlgorithm::ring, Protocol::simple) / d.base(NcclAlgorithm::ring, Protocol::simple)
                           : 1;
  out.number("base_latency_scale", scale);
  out.words("identified", identified);
  out.end_map();
  return true;
}

}  // namespace aggsim
