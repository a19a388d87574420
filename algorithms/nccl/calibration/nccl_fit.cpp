#include "algorithms/nccl/calibration/nccl_fit.hpp"

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
// Gauss-Newton steps of the robust fit at most (it stops once no parameter moves).
constexpr int kMaxIterations = 60;
// The robust loss's scale in log time, at least: a point about 10 % off the fit counts half, one
// 20 % off not at all. Wider where the points spread more (robust_scale).
constexpr double kRobustScale = 0.2;
constexpr double kBiweightEfficiency = 4.685;  // Tukey's biweight scale for 95 % efficiency under normal errors
constexpr double kMadToSigma = 1.4826;        // a normal distribution's sigma over its median |error|

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

AppliedModel apply_nccl_params(const NcclParamValues& x) {
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
  c.nvls_head_latency_s = d.nvls_head_latency_s * at(NcclParam::base);
  c.efficiency[static_cast<int>(Protocol::ll)] = 1 / at(NcclParam::efficiency_ll);
  c.efficiency[static_cast<int>(Protocol::ll128)] = 1 / at(NcclParam::efficiency_ll128);
  c.nvls_efficiency = 1 / at(NcclParam::bandwidth_nvls);
  return {std::make_shared<NcclProtocolParameters>(c), 1 / at(NcclParam::bandwidth_intra),
          1 / at(NcclParam::bandwidth_network)};
}

namespace {

// The linear model of the points' times around x0: T_i(x) = at_i + sum_k slope(i, k) (x_k - x0_k).
struct LinearTimes {
  const std::vector<double>& at;
  const NcclParamValues& x0;
  const std::vector<NcclParam>& candidates;
  const std::vector<std::vector<double>>& probe;
  double slope(std::size_t i, std::size_t k) const {
    return (probe[k][i] - at[i]) / x0[static_cast<std::size_t>(candidates[k])];
  }
  double time(std::size_t i, const NcclParamValues& x) const {
    double t = at[i];
    for (std::size_t k = 0; k < candidates.size(); ++k) {
      const auto p = static_cast<std::size_t>(candidates[k]);
      t += slope(i, k) * (x[p] - x0[p]);
    }
    return t;
  }
};

// Which candidates the data identify: each must move some point (of positive weight) by
// kMinSensitivity when doubled, and keep kMinIndependence of its column once the columns of the
// parameters taken before it (largest effect first) are projected out. The others get a note.
std::vector<NcclParam> identifiable(const LinearTimes& lin, const std::vector<double>& measured,
                                    const std::vector<double>& weight, std::vector<NcclFitNote>& notes) {
  const auto n = static_cast<Eigen::Index>(measured.size());
  std::vector<NcclParam> kept;
  std::vector<Eigen::VectorXd> columns;
  std::vector<double> effect;
  for (std::size_t k = 0; k < lin.candidates.size(); ++k) {
    const double step = lin.x0[static_cast<std::size_t>(lin.candidates[k])];
    Eigen::VectorXd col = Eigen::VectorXd::Zero(n);
    double largest = 0;
    for (Eigen::Index i = 0; i < n; ++i) {
      const auto u = static_cast<std::size_t>(i);
      if (weight[u] <= 0) continue;
      col[i] = lin.slope(u, k) / measured[u];
      largest = std::max(largest, std::fabs(col[i]) * step);
    }
    if (largest < kMinSensitivity) {
      notes.push_back(
          {lin.candidates[k],
           fmt::format("{}: doubling it moves no point by {:.0f} % (at most {:.1f} %); kept at {:.4g}",
                       nccl_param_name(lin.candidates[k]), 100 * kMinSensitivity, 100 * largest, step)});
      continue;
    }
    kept.push_back(lin.candidates[k]);
    columns.push_back(col);
    effect.push_back(col.norm() * step);
  }
  std::vector<std::size_t> order(kept.size());
  for (std::size_t k = 0; k < order.size(); ++k) order[k] = k;
  // Two parameters that move every point alike (NVLS's share and the link share on a node where only
  // NVLS runs) tie: the later of NcclParam's order, the more specific, is taken (the switch's share,
  // not the links', which the platform gives).
  const auto ties = [&](std::size_t a, std::size_t b) {
    return std::fabs(effect[a] - effect[b]) <= 1e-9 * std::max(effect[a], effect[b]);
  };
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return ties(a, b) ? kept[a] > kept[b] : effect[a] > effect[b];
  });
  std::vector<Eigen::VectorXd> basis;
  std::vector<NcclParam> chosen;
  for (std::size_t k : order) {
    Eigen::VectorXd r = columns[k];
    for (const auto& b : basis) r -= b.dot(r) * b;
    if (r.norm() < kMinIndependence * columns[k].norm()) {
      notes.push_back(
          {kept[k],
           fmt::format("{}: the data cannot tell it from the parameters fitted before it; kept at {:.4g}",
                       nccl_param_name(kept[k]), lin.x0[static_cast<std::size_t>(kept[k])])});
      continue;
    }
    basis.push_back(r / r.norm());
    chosen.push_back(kept[k]);
  }
  return chosen;
}

// A point's weight under the robust loss: Tukey's biweight, of that scale in log time. It redescends:
// a point beyond the scale pulls nothing, so a few points the model cannot follow (a network
// plugin's slow protocol at some sizes) do not move the parameters they share with the rest.
double robust_weight(double log_error, double scale) {
  const double u = log_error / scale;
  return std::fabs(u) >= 1 ? 0.0 : (1 - u * u) * (1 - u * u);
}

// log(T_i(x) / measured_i), with T kept above a thousandth of the measured time.
double log_error(const LinearTimes& lin, const std::vector<double>& measured, std::size_t i,
                 const NcclParamValues& x) {
  return std::log(std::max(lin.time(i, x), 1e-3 * measured[i]) / measured[i]);
}

// The robust loss's scale at x: the biweight's 95 %-efficient constant (4.685) times the errors' spread,
// estimated robustly as 1.4826 times the median absolute log error of the points of positive weight;
// at least kRobustScale. A log the model follows closely gets a tight scale, one it cannot follow
// everywhere (a network plugin's steps in size) a wide one, so that only points far off the rest
// count less.
double robust_scale(const LinearTimes& lin, const std::vector<double>& measured, const std::vector<double>& weight,
                    const NcclParamValues& x) {
  std::vector<double> errors;
  for (std::size_t i = 0; i < measured.size(); ++i)
    if (weight[i] > 0) errors.push_back(std::fabs(log_error(lin, measured, i, x)));
  if (errors.empty()) return kRobustScale;
  const auto middle = errors.begin() + static_cast<std::ptrdiff_t>(errors.size() / 2);
  std::nth_element(errors.begin(), middle, errors.end());
  return std::max(kRobustScale, kBiweightEfficiency * kMadToSigma * *middle);
}

// One Gauss-Newton step for the parameters not `held`, each point weighted by weight x its robust
// weight at x: the step that minimises sum w_i (r_i + J_i dx)^2, J the slopes of log T.
Eigen::VectorXd gauss_newton_step(const LinearTimes& lin, const std::vector<double>& measured,
                                  const std::vector<double>& weight, const std::vector<NcclParam>& chosen,
                                  const std::vector<std::size_t>& column, const std::vector<bool>& held,
                                  const NcclParamValues& x) {
  const std::size_t n = measured.size();
  std::vector<std::size_t> free;
  for (std::size_t j = 0; j < chosen.size(); ++j)
    if (!held[j]) free.push_back(j);
  const auto m = static_cast<Eigen::Index>(free.size());
  const auto rows = static_cast<Eigen::Index>(n);
  if (m == 0) return Eigen::VectorXd::Zero(static_cast<Eigen::Index>(chosen.size()));
  const double scale = robust_scale(lin, measured, weight, x);
  Eigen::MatrixXd A = Eigen::MatrixXd::Zero(rows + m, m);
  Eigen::VectorXd b = Eigen::VectorXd::Zero(rows + m);
  for (std::size_t i = 0; i < n; ++i) {
    const double t = std::max(lin.time(i, x), 1e-3 * measured[i]);
    const double r = log_error(lin, measured, i, x);
    const double w = std::sqrt(weight[i] * robust_weight(r, scale));
    const auto row = static_cast<Eigen::Index>(i);
    b[row] = -w * r;
    for (Eigen::Index f = 0; f < m; ++f) A(row, f) = w * lin.slope(i, column[free[static_cast<std::size_t>(f)]]) / t;
  }
  for (Eigen::Index f = 0; f < m; ++f) {
    const auto p = static_cast<std::size_t>(chosen[free[static_cast<std::size_t>(f)]]);
    A(rows + f, f) = std::sqrt(kPrior) / lin.x0[p];
    b[rows + f] = -std::sqrt(kPrior) * (x[p] - lin.x0[p]) / lin.x0[p];
  }
  const Eigen::VectorXd solved = A.colPivHouseholderQr().solve(b);
  Eigen::VectorXd dx = Eigen::VectorXd::Zero(static_cast<Eigen::Index>(chosen.size()));
  for (Eigen::Index f = 0; f < m; ++f) dx[static_cast<Eigen::Index>(free[static_cast<std::size_t>(f)])] = solved[f];
  return dx;
}

}  // namespace

namespace {

// What one fit works on: the points' linear model, their measured times and prior weights, and the
// parameters the data identify (chosen), each with its column among the candidates and its bounds.
struct FitProblem {
  const LinearTimes& lin;
  const std::vector<double>& measured;
  const std::vector<double>& weight;
  std::vector<NcclParam> chosen;
  std::vector<std::size_t> column;  // chosen parameter j's index among the candidates
  std::vector<Bounds> bounds;

  FitProblem(const LinearTimes& l, const std::vector<double>& m, const std::vector<double>& w,
             std::vector<NcclParam> parameters)
      : lin(l), measured(m), weight(w), chosen(std::move(parameters)) {
    for (NcclParam p : chosen) {
      column.push_back(static_cast<std::size_t>(std::find(lin.candidates.begin(), lin.candidates.end(), p) -
                                                lin.candidates.begin()));
      bounds.push_back(bounds_of(p, nccl_param_defaults()[static_cast<std::size_t>(p)]));
    }
  }
  Eigen::VectorXd step(const std::vector<bool>& held, const NcclParamValues& x) const {
    return gauss_newton_step(lin, measured, weight, chosen, column, held, x);
  }
};

// The Gauss-Newton step at x, with a parameter at a bound that the step would push beyond it held
// there (the step solved again without it, until none is pushed out).
Eigen::VectorXd bounded_step(const FitProblem& f, const NcclParamValues& x) {
  std::vector<bool> held(f.chosen.size(), false);
  Eigen::VectorXd dx;
  for (std::size_t round = 0; round <= f.chosen.size(); ++round) {
    dx = f.step(held, x);
    bool more = false;
    for (std::size_t j = 0; j < f.chosen.size(); ++j) {
      const double v = x[static_cast<std::size_t>(f.chosen[j])], d = dx[static_cast<Eigen::Index>(j)];
      if (!held[j] && ((v <= f.bounds[j].low && d < 0) || (v >= f.bounds[j].high && d > 0))) held[j] = more = true;
    }
    if (!more) break;
  }
  return dx;
}

// The share of `dx` to take: halved while it would make a weighted point's time negative.
double step_length(const FitProblem& f, const NcclParamValues& x, const Eigen::VectorXd& dx) {
  double alpha = 1;
  for (int halving = 0; halving < 30; ++halving, alpha /= 2) {
    NcclParamValues trial = x;
    for (std::size_t j = 0; j < f.chosen.size(); ++j)
      trial[static_cast<std::size_t>(f.chosen[j])] += alpha * dx[static_cast<Eigen::Index>(j)];
    bool positive = true;
    for (std::size_t i = 0; i < f.measured.size(); ++i)
      positive = positive && (f.weight[i] <= 0 || f.lin.time(i, trial) > 0);
    if (positive) break;
  }
  return alpha;
}

// Gauss-Newton on the log of simulated over measured, reweighted at every step by the robust loss
// (iteratively reweighted least squares), from x0 and inside the bounds.
void minimise(const FitProblem& f, NcclParamValues& x) {
  for (int iteration = 0; iteration < kMaxIterations && !f.chosen.empty(); ++iteration) {
    const Eigen::VectorXd dx = bounded_step(f, x);
    const double alpha = step_length(f, x, dx);
    double moved = 0;
    for (std::size_t j = 0; j < f.chosen.size(); ++j) {
      const auto p = static_cast<std::size_t>(f.chosen[j]);
      const double v =
          std::clamp(x[p] + alpha * dx[static_cast<Eigen::Index>(j)], f.bounds[j].low, f.bounds[j].high);
      moved = std::max(moved, std::fabs(v - x[p]) / f.lin.x0[p]);
      x[p] = v;
    }
    if (moved < 1e-10) break;
  }
}

// The fitted parameters, those at a bound (there, with the data asking to go beyond it: a free
// step would leave the bounds), and each point's prediction and weight at the fit.
void record_fit(const FitProblem& f, NcclFitResult& result) {
  const NcclParamValues& x = result.values;
  const Eigen::VectorXd beyond =
      f.chosen.empty() ? Eigen::VectorXd() : f.step(std::vector<bool>(f.chosen.size()), x);
  for (std::size_t j = 0; j < f.chosen.size(); ++j) {
    const auto p = static_cast<std::size_t>(f.chosen[j]);
    result.identified.push_back(f.chosen[j]);
    const double push = beyond[static_cast<Eigen::Index>(j)] / f.lin.x0[p];
    if ((x[p] <= f.bounds[j].low && push < -1e-6) || (x[p] >= f.bounds[j].high && push > 1e-6))
      result.at_bound.push_back(f.chosen[j]);
  }
  std::sort(result.identified.begin(), result.identified.end());
  std::sort(result.at_bound.begin(), result.at_bound.end());
  const double scale = robust_scale(f.lin, f.measured, f.weight, x);
  for (std::size_t i = 0; i < f.measured.size(); ++i) {
    result.predicted.push_back(f.lin.time(i, x));
    result.weights.push_back(f.weight[i] * robust_weight(log_error(f.lin, f.measured, i, x), scale));
  }
}

}  // namespace

NcclFitResult fit_nccl_params(const std::vector<double>& measured, const std::vector<double>& at,
                              const NcclParamValues& x0, const std::vector<NcclParam>& candidates,
                              const std::vector<std::vector<double>>& probe, std::vector<double> weight) {
  if (weight.empty()) weight.assign(measured.size(), 1.0);
  NcclFitResult result;
  result.values = x0;
  const LinearTimes lin{at, x0, candidates, probe};
  const FitProblem problem(lin, measured, weight, identifiable(lin, measured, weight, result.notes));
  minimise(problem, result.values);
  record_fit(problem, result);
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
