#include "algorithms/nccl/calibration/nccl_calibration.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <vector>

#include "algorithms/nccl/calibration/nccl_fit.hpp"
#include "algorithms/nccl/calibration/nccl_logged_choice.hpp"
#include "algorithms/nccl/calibration/nccl_section.hpp"

namespace aggsim {

namespace {

NcclParamValues values_of(const std::vector<double>& v) {
  NcclParamValues x{};
  std::copy_n(v.begin(), std::min<std::size_t>(v.size(), x.size()), x.begin());
  return x;
}

std::vector<NcclParam> params_of(const std::vector<std::size_t>& indices) {
  std::vector<NcclParam> params;
  for (std::size_t k : indices) params.push_back(static_cast<NcclParam>(k));
  return params;
}

std::vector<std::size_t> indices_of(const std::vector<NcclParam>& params) {
  std::vector<std::size_t> indices;
  for (NcclParam p : params) indices.push_back(static_cast<std::size_t>(p));
  return indices;
}

ModelFit model_fit(const NcclFitResult& r) {
  ModelFit fit;
  fit.values.assign(r.values.begin(), r.values.end());
  fit.identified = indices_of(r.identified);
  for (const NcclFitNote& n : r.notes) fit.notes.emplace_back(static_cast<std::size_t>(n.param), n.text);
  fit.at_bound = indices_of(r.at_bound);
  fit.predicted = r.predicted;
  fit.weights = r.weights;
  return fit;
}

NcclFitResult nccl_fit_result(const ModelFit& f) {
  NcclFitResult r;
  r.values = values_of(f.values);
  r.identified = params_of(f.identified);
  for (const auto& [k, text] : f.notes) r.notes.push_back({static_cast<NcclParam>(k), text});
  r.at_bound = params_of(f.at_bound);
  r.predicted = f.predicted;
  r.weights = f.weights;
  return r;
}

ModelCalibration nccl_protocol_model() {
  ModelCalibration model;
  for (int k = 0; k < kNcclParams; ++k) model.names.push_back(nccl_param_name(static_cast<NcclParam>(k)));
  const NcclParamValues defaults = nccl_param_defaults();
  model.defaults.assign(defaults.begin(), defaults.end());
  model.relevant = [](std::size_t k, const std::vector<std::string>& choices, bool any_inter, bool any_intra) {
    return nccl_param_relevant(static_cast<NcclParam>(k), choices, any_inter, any_intra);
  };
  model.apply = [](const std::vector<double>& values) { return apply_nccl_params(values_of(values)); };
  model.fit = [](const std::vector<double>& measured, const std::vector<double>& at, const std::vector<double>& x0,
                 const std::vector<std::size_t>& candidates, const std::vector<std::vector<double>>& probe,
                 const std::vector<double>& weight) {
    return model_fit(fit_nccl_params(measured, at, values_of(x0), params_of(candidates), probe, weight));
  };
  model.merge = [](const ModelFit& earlier, const ModelFit& later) {
    return model_fit(merge_fit_passes(nccl_fit_result(earlier), nccl_fit_result(later)));
  };
  model.report_title = "nccl_allreduce parameters (NCCL 2.21.5's values times the fitted multipliers):";
  model.defaults_are = "NCCL";
  model.numbers_are = "NCCL's protocol costs and the share of each link's bandwidth NCCL reaches";
  model.models_itself = "models NCCL's pipelining, protocols and base latencies itself";
  model.section = kNcclSection;
  model.read_section = read_nccl_section;
  model.write_section = write_nccl_section;
  return model;
}

// Every collective but sendrecv runs as NCCL's call of that name (the `collective` key); sendrecv,
// which NCCL has no call for, as the message-level algorithms run it.
CollectivePlan nccl_plan(const std::string& collective, int ranks, std::uint64_t bytes, const std::string& source) {
  if (collective == "sendrecv") return message_level_plan(collective, ranks, bytes, source);
  std::vector<std::string> sets{fmt::format("algorithm.collective={}", collective)};
  // nccl-tests reduce with sum (its -o default), which decides whether NCCL may reduce-scatter by NVLS.
  if (collective == "reduce_scatter") sets.emplace_back("algorithm.op=sum");
  return {sets, bytes, 1, static_cast<double>(bytes) / ranks};
}

}  // namespace

CalibrationCapability nccl_calibration() {
  CalibrationCapability capability;
  capability.model = nccl_protocol_model();
  capability.logged_choices = nccl_logged_choices();
  capability.plan = nccl_plan;
  return capability;
}

}  // namespace aggsim
