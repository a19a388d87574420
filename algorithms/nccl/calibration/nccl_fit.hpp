#pragma once
// The calibration of nccl_allreduce: a few physical parameters of NCCL's protocols fitted to
// measured times, instead of a factor per size step. Each parameter is a linear quantity of the
// model (a latency, or an inverse bandwidth), so the simulated time of a point is, while NCCL's
// choice and the critical streams stay the same, linear in it: T(x) = T(x0) + J (x - x0), with J
// measured by probing each parameter at twice its value. The fit minimises a robust loss of the
// log errors over the parameters the data identify; the others keep NCCL's values and are reported
// as assumed.
#include <array>
#include <string>
#include <vector>

#include "algorithms/calibration_capability.hpp"
#include "algorithms/nccl/protocol.hpp"

namespace aggsim {

// Hop latencies are multipliers of NCCL's per link class (inside a node: NVLink and PCIe together)
// and protocol; `base` multiplies every base latency; bandwidth_* are the inverse of the share of
// a link's bandwidth reached inside a node / between nodes / by NVLS's switch operations;
// efficiency_* the inverse of LL's and LL128's efficiency (Simple's is 1 by definition: the link
// shares carry it).
enum class NcclParam {
  hop_intra_ll,
  hop_intra_ll128,
  hop_intra_simple,
  hop_network_ll,
  hop_network_ll128,
  hop_network_simple,
  base,
  bandwidth_intra,
  bandwidth_network,
  efficiency_ll,
  efficiency_ll128,
  bandwidth_nvls,
};
inline constexpr int kNcclParams = 12;
const char* nccl_param_name(NcclParam p);

using NcclParamValues = std::array<double, kNcclParams>;

// NCCL's own values (multipliers 1, link shares 1, 1/0.5 and 1/0.92; NVLS: 1/kHopperNvlsEfficiency).
NcclParamValues nccl_param_defaults();
// Whether the parameter can matter for points that use these algorithm/protocol pairs
// ("ring/ll128") and cross nodes or not.
bool nccl_param_relevant(NcclParam p, const std::vector<std::string>& choices, bool any_inter,
                         bool any_intra);

// What `values` put in place: NCCL's protocol costs and one bandwidth factor per link class.
AppliedModel apply_nccl_params(const NcclParamValues& values);

struct NcclFitNote {
  NcclParam param;
  std::string text;  // why the data did not identify it
};

struct NcclFitResult {
  NcclParamValues values{};
  std::vector<NcclParam> identified;  // fitted; the other candidates kept their values
  std::vector<NcclFitNote> notes;     // the candidates that were not identified
  // Fitted, but held at a bound of the model: the data ask for more than the model allows (a
  // protocol above its wire efficiency, a hop latency 50 times NCCL's), so what runs on it carries it.
  std::vector<NcclParam> at_bound;
  std::vector<double> predicted;      // each point's time under the fit's linear model
  // Each point's weight in the fit: its prior weight times the robust loss's at the fit (1 on the
  // fit, a half at 0.54 times the loss's scale off it, none at the scale or beyond).
  std::vector<double> weights;
};

// `measured[i]` the measured time of point i, `at[i]` its simulated time at `x0`, `probe[k][i]` its
// simulated time with candidate k at twice its x0 value; `weight[i]` its prior weight (0: an outlier
// the fit ignores; empty: all 1). The fit minimises a robust loss of the log of simulated over
// measured time (Tukey's biweight, its scale 4.685 times the errors' robust spread and at least 0.2:
// a point beyond it pulls nothing), by Gauss-Newton on the points' linear model, reweighted at each
// step. Bounds are NCCL's values times a range (bounds_of),
// wherever x0 starts.
NcclFitResult fit_nccl_params(const std::vector<double>& measured, const std::vector<double>& at,
                              const NcclParamValues& x0, const std::vector<NcclParam>& candidates,
                              const std::vector<std::vector<double>>& probe, std::vector<double> weight = {});

// A fit in passes, each linearised around the last one's values: a parameter some pass fitted was
// fitted by the data, even where a later pass, around its new value, finds no point that moves
// with it; one a pass held at a bound stays there unless a later pass moved it. `later`'s values.
NcclFitResult merge_fit_passes(const NcclFitResult& earlier, const NcclFitResult& later);

}  // namespace aggsim
