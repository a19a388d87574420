#include "sim/calibrate/nccl_fit.hpp"

#include <fmt/format.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>

namespace aggsim {

namespace {

constexpr int kIntraClasses[] = {static_cast<int>(LinkClass::nvlink), static_cast<int>(LinkClass::pcie)};
constexpr int kNetwork = static_cast<int>(LinkClass::network);

// A candidate moves some point by at least this share of its time when doubled, else it is noise.
constexpr double kMinSensitivity = 0.03;
// A column must keep this share of its length once the columns already taken are projected out.
constexpr double kMinIndependence = 0.15;
// Pull toward NCCL's values, relative: decides only what the data leave open.
constexpr double kPrior = 1e-10;

struct Bounds {
  double low, high;
};
Bounds bounds_of(NcclParam p, double nccl_value) {
  switch (p) {
    case NcclParam::bandwidth_intra:
    case NcclParam::bandwidth_network:
    case NcclParam::bandwidth_nvls:
      // A link down to a 20th of its platform rate, and no faster: the platform gives the hardware's
      // rates, and points faster than they allow ran another algorithm than the model's (NCCL's
      // tree on two nodes carries up to twice a ring's bus bandwidth).
      return {1, 20};
    case NcclParam::efficiency_ll:
    case NcclParam::efficiency_ll128:
      return {1, 20};  // efficiency at most 1
    default:
      return {0.02 * nccl_value, 50 * nccl_value};
  }
}

}  // namespace

const char* nccl_param_name(NcclParam p) {
  switch (p) {
    case NcclParam::hop_intra_ll:
      return "hop_latency.intra.ll";
    case NcclParam::hop_intra_ll128:
      return "hop_latency.intra.ll128";
    case NcclParam::hop_intra_simple:
      return "hop_latency.intra.simple";
    case NcclParam::hop_network_ll:
      return "hop_latency.network.ll";
    case NcclParam::hop_network_ll128:
      return "hop_latency.network.ll128";
    case NcclParam::hop_network_simple:
      return "hop_latency.network.simple";
    case NcclParam::base:
      return "base_latency";
    case NcclParam::bandwidth_intra:
      return "bandwidth.intra";
    case NcclParam::bandwidth_network:
      return "bandwidth.network";
    case NcclParam::efficiency_ll:
      return "efficiency.ll";
    case NcclParam::efficiency_ll128:
      return "efficiency.ll128";
    case NcclParam::bandwidth_nvls:
      return "bandwidth.nvls";
  }
  return "?";
}

NcclParamValues nccl_param_defaults() {
  NcclParamValues x;
  x.fill(1);
  const ProtocolCosts d = ProtocolCosts::nccl_defaults();
  x[static_cast<int>(NcclParam::efficiency_ll)] = 1 / d.eff(Protocol::ll);
  x[static_cast<int>(NcclParam::efficiency_ll128)] = 1 / d.eff(Protocol::ll128);
  x[static_cast<int>(NcclParam::bandwidth_nvls)] = 1 / d.nvls_efficiency;
  return x;
}

bool nccl_param_relevant(NcclParam p, const std::vector<std::string>& choices, bool any_inter,
                         bool any_intra) {
  const auto uses = [&](const std::string& protocol) {
    return std::any_of(choices.begin(), choices.end(), [&](const std::string& c) {
      return c.size() > protocol.size() &&
             c.compare(c.size() - protocol.size() - 1, std::string::npos, "/" + protocol) == 0;
    });
  };
  switch (p) {
    case NcclParam::hop_intra_ll:
      return uses("ll");
    case NcclParam::hop_intra_ll128:
      return uses("ll128");
    case NcclParam::hop_intra_simple:
      return uses("simple");
    case NcclParam::hop_network_ll:
      return any_inter && uses("ll");
    case NcclParam::hop_network_ll128:
      return any_inter && uses("ll128");
    case NcclParam::hop_network_simple:
      return any_inter && uses("simple");
    case NcclParam::base:
      return true;
    case NcclParam::bandwidth_intra:
      return any_intra;
    case NcclParam::bandwidth_network:
      return any_inter;
    case NcclParam::efficiency_ll:
      return uses("ll");
    case NcclParam::efficiency_ll128:
      return uses("ll128");
    case NcclParam::bandwidth_nvls:
      return std::any_of(choices.begin(), choices.end(),
                         [](const std::string& c) { return c.rfind("nvls", 0) == 0; });
  }
  return false;
}

void apply_nccl_params(const NcclParamValues& x, Calibration& cal) {
  const ProtocolCosts d = ProtocolCosts::nccl_defaults();
  ProtocolCosts c = d;
  const auto at = [&](NcclParam p) { return x[static_cast<std::size_t>(p)]; };
  const NcclParam intra[] = {NcclParam::hop_intra_ll, NcclParam::hop_intra_ll128,
                             NcclParam::hop_intra_simple};
  const NcclParam network[] = {NcclParam::hop_network_ll, NcclParam::hop_network_ll128,
                               NcclParam::hop_network_simple};
  for (int proto = 0; proto < 3; ++proto) {
    const auto pr = static_cast<std::size_t>(proto);
    for (int k : kIntraClasses)
      c.hop_latency_s[static_cast<std::size_t>(k)][pr] =
          d.hop_latency_s[static_cast<std::size_t>(k)][pr] * at(intra[pr]);
    c.hop_latency_s[kNetwork][pr] = d.hop_latency_s[kNetwork][pr] * at(network[pr]);
  }
  for (auto& row : c.base_latency_s)
    for (double& b : row) b *= at(NcclParam::base);
  c.nvls_hop_latency_s = d.nvls_hop_latency_s * at(NcclParam::base);
  c.efficiency[static_cast<int>(Protocol::ll)] = 1 / at(NcclParam::efficiency_ll);
  c.efficiency[static_cast<int>(Protocol::ll128)] = 1 / at(NcclParam::efficiency_ll128);
  c.nvls_efficiency = 1 / at(NcclParam::bandwidth_nvls);
  cal.nccl = c;
  cal.intra.steps = {{0, 1.0, 1 / at(NcclParam::bandwidth_intra)}};
  cal.inter.steps = {{0, 1.0, 1 / at(NcclParam::bandwidth_network)}};
}

NcclFitResult fit_nccl_params(const std::vector<double>& measured, const std::vector<double>& at,
                              const NcclParamValues& x0, const std::vector<NcclParam>& candidates,
                              const std::vector<std::vector<double>>& probe) {
  const auto n = static_cast<Eigen::Index>(measured.size());
  NcclFitResult result;
  result.values = x0;
  // Relative sensitivities: A(i, k) = change of point i's time, over its measured time, per unit of
  // parameter k (the probe doubled it: a step of x0_k).
  std::vector<NcclParam> kept;
  std::vector<Eigen::VectorXd> columns;
  for (std::size_t k = 0; k < candidates.size(); ++k) {
    const double step = x0[static_cast<std::size_t>(candidates[k])];
    Eigen::VectorXd col(n);
    double largest = 0;
    for (Eigen::Index i = 0; i < n; ++i) {
      const auto u = static_cast<std::size_t>(i);
      col[i] = (probe[k][u] - at[u]) / step / measured[u];
      largest = std::max(largest, std::fabs(col[i]) * step);
    }
    if (largest < kMinSensitivity) {
      result.notes.push_back(
          {candidates[k],
           fmt::format("{}: doubling it moves no point by {:.0f} % (at most {:.1f} %); kept at {:.4g}",
                       nccl_param_name(candidates[k]), 100 * kMinSensitivity, 100 * largest, step)});
      continue;
    }
    kept.push_back(candidates[k]);
    columns.push_back(col);
  }
  // Independence: Gram-Schmidt in order of sensitivity (largest first), dropping columns the
  // others already explain.
  std::vector<std::size_t> order(kept.size());
  for (std::size_t k = 0; k < order.size(); ++k) order[k] = k;
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return columns[a].norm() * x0[static_cast<std::size_t>(kept[a])] >
           columns[b].norm() * x0[static_cast<std::size_t>(kept[b])];
  });
  std::vector<Eigen::VectorXd> basis;
  std::vector<std::size_t> chosen;
  for (std::size_t k : order) {
    Eigen::VectorXd r = columns[k];
    for (const auto& b : basis) r -= b.dot(r) * b;
    if (r.norm() < kMinIndependence * columns[k].norm()) {
      result.notes.push_back(
          {kept[k],
           fmt::format("{}: the data cannot tell it from the parameters fitted before it; kept at {:.4g}",
                       nccl_param_name(kept[k]), x0[static_cast<std::size_t>(kept[k])])});
      continue;
    }
    basis.push_back(r / r.norm());
    chosen.push_back(k);
  }
  // Bounded least squares by clamping: solve, fix what leaves its bounds at the bound, solve again.
  const NcclParamValues defaults = nccl_param_defaults();
  std::vector<bool> fixed(chosen.size(), false);
  Eigen::VectorXd x(static_cast<Eigen::Index>(chosen.size()));
  for (std::size_t j = 0; j < chosen.size(); ++j)
    x[static_cast<Eigen::Index>(j)] = x0[static_cast<std::size_t>(kept[chosen[j]])];
  for (int round = 0; round <= static_cast<int>(chosen.size()); ++round) {
    std::vector<std::size_t> free;
    for (std::size_t j = 0; j < chosen.size(); ++j)
      if (!fixed[j]) free.push_back(j);
    const auto m = static_cast<Eigen::Index>(free.size());
    if (m == 0) break;
    Eigen::MatrixXd A = Eigen::MatrixXd::Zero(n + m, m);
    Eigen::VectorXd b = Eigen::VectorXd::Zero(n + m);
    for (Eigen::Index i = 0; i < n; ++i) {
      const auto u = static_cast<std::size_t>(i);
      double rhs = 1 - at[u] / measured[u];
      for (std::size_t j = 0; j < chosen.size(); ++j) {
        const std::size_t k = chosen[j];
        const double dx = x[static_cast<Eigen::Index>(j)] - x0[static_cast<std::size_t>(kept[k])];
        if (fixed[j]) rhs -= columns[k][i] * dx;
      }
      b[i] = rhs;
      for (Eigen::Index f = 0; f < m; ++f) A(i, f) = columns[chosen[free[static_cast<std::size_t>(f)]]][i];
    }
    for (Eigen::Index f = 0; f < m; ++f) {
      const double scale = x0[static_cast<std::size_t>(kept[chosen[free[static_cast<std::size_t>(f)]]])];
      A(n + f, f) = std::sqrt(kPrior) / scale;
    }
    const Eigen::VectorXd dx = A.colPivHouseholderQr().solve(b);
    bool clamped = false;
    for (Eigen::Index f = 0; f < m; ++f) {
      const std::size_t j = free[static_cast<std::size_t>(f)];
      const NcclParam p = kept[chosen[j]];
      const double start = x0[static_cast<std::size_t>(p)];
      const Bounds bd = bounds_of(p, defaults[static_cast<std::size_t>(p)]);
      double v = start + dx[f];
      if (v < bd.low || v > bd.high) {
        v = std::clamp(v, bd.low, bd.high);
        fixed[j] = true;
        clamped = true;
      }
      x[static_cast<Eigen::Index>(j)] = v;
    }
    if (!clamped) break;
  }
  for (std::size_t j = 0; j < chosen.size(); ++j) {
    const NcclParam p = kept[chosen[j]];
    result.values[static_cast<std::size_t>(p)] = x[static_cast<Eigen::Index>(j)];
    result.identified.push_back(p);
    if (fixed[j]) result.at_bound.push_back(p);
  }
  std::sort(result.identified.begin(), result.identified.end());
  result.predicted.resize(measured.size());
  for (std::size_t i = 0; i < measured.size(); ++i) {
    double t = at[i];
    for (std::size_t c = 0; c < candidates.size(); ++c) {
      const auto p = static_cast<std::size_t>(candidates[c]);
      t += (probe[c][i] - at[i]) / x0[p] * (result.values[p] - x0[p]);
    }
    result.predicted[i] = t;
  }
  return result;
}

NcclFitResult merge_fit_passes(const NcclFitResult& earlier, const NcclFitResult& later) {
  NcclFitResult merged = later;
  const auto has = [](const std::vector<NcclParam>& v, NcclParam p) {
    return std::find(v.begin(), v.end(), p) != v.end();
  };
  for (NcclParam p : earlier.identified)
    if (!has(merged.identified, p)) merged.identified.push_back(p);
  std::sort(merged.identified.begin(), merged.identified.end());
  for (NcclParam p : earlier.at_bound) {
    const auto k = static_cast<std::size_t>(p);
    if (!has(merged.at_bound, p) && later.values[k] == earlier.values[k]) merged.at_bound.push_back(p);
  }
  std::sort(merged.at_bound.begin(), merged.at_bound.end());
  merged.notes.clear();
  for (const NcclFitNote& n : later.notes)
    if (!has(merged.identified, n.param)) merged.notes.push_back(n);
  return merged;
}

}  // namespace aggsim
