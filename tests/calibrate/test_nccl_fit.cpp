// The NCCL calibration's fit (sim/calibrate/nccl_fit.hpp): on times that are exactly linear in the
// parameters it recovers them; what the data cannot see or cannot tell apart keeps NCCL's value and
// is named; bounds hold.
#include <catch2/catch.hpp>
#include <cmath>

#include "algorithms/nccl/calibration/nccl_fit.hpp"

using namespace aggsim;

namespace {

// Point i's time under parameters x: a base latency, a per-hop latency times hops, bytes over a
// bandwidth share; `hops` and `bytes` vary by point so each parameter shows.
struct Linear {
  std::vector<double> base, hop, bw;  // time per unit of each parameter
  double at(std::size_t i, double b, double h, double w) const {
    return base[i] * b + hop[i] * h + bw[i] * w;
  }
};

}  // namespace

TEST_CASE("the NCCL fit recovers parameters of times linear in them, and names what it cannot see",
          "[calibrate][nccl]") {
  const std::vector<NcclParam> candidates = {NcclParam::base, NcclParam::hop_network_simple,
                                             NcclParam::bandwidth_network, NcclParam::hop_intra_ll};
  const NcclParamValues x0 = nccl_param_defaults();
  Linear m;
  for (int i = 0; i < 12; ++i) {
    m.base.push_back(10e-6);
    m.hop.push_back(14e-6 * (2 + i % 3));     // 2, 3 or 4 hops: separable from the base
    m.bw.push_back(std::pow(2.0, i) * 1e-6);  // sizes doubling
  }
  const double b = 1.7, h = 0.6, w = 1.25;  // the truth (multipliers)
  std::vector<double> measured, at;
  std::vector<std::vector<double>> probe(candidates.size());
  for (std::size_t i = 0; i < m.base.size(); ++i) {
    measured.push_back(m.at(i, b, h, w));
    at.push_back(m.at(i, 1, 1, 1));
    probe[0].push_back(m.at(i, 2, 1, 1));
    probe[1].push_back(m.at(i, 1, 2, 1));
    probe[2].push_back(m.at(i, 1, 1, 2));
    probe[3].push_back(m.at(i, 1, 1, 1) * (1 + 1e-4));  // hop_intra_ll barely moves anything
  }
  const NcclFitResult fit = fit_nccl_params(measured, at, x0, candidates, probe);
  CHECK(fit.values[static_cast<int>(NcclParam::base)] == Approx(b).epsilon(1e-3));
  CHECK(fit.values[static_cast<int>(NcclParam::hop_network_simple)] == Approx(h).epsilon(1e-3));
  CHECK(fit.values[static_cast<int>(NcclParam::bandwidth_network)] == Approx(w).epsilon(1e-3));
  CHECK(fit.values[static_cast<int>(NcclParam::hop_intra_ll)] == 1.0);
  REQUIRE(fit.identified.size() == 3);
  REQUIRE(fit.notes.size() == 1);
  CHECK(fit.notes[0].text.find("hop_latency.intra.ll") != std::string::npos);
  for (std::size_t i = 0; i < measured.size(); ++i)
    CHECK(fit.predicted[i] == Approx(measured[i]).epsilon(1e-3));
}

TEST_CASE("the NCCL fit keeps one of two parameters the data cannot tell apart, and respects bounds",
          "[calibrate][nccl]") {
  const NcclParamValues x0 = nccl_param_defaults();
  // Base and network hop latency with the same hop count at every point: indistinguishable.
  const std::vector<NcclParam> candidates = {NcclParam::base, NcclParam::hop_network_ll};
  std::vector<double> measured, at;
  std::vector<std::vector<double>> probe(2);
  for (int i = 0; i < 6; ++i) {
    const double bw = (i + 1) * 1e-6;
    at.push_back(10e-6 + 5e-6 + bw);
    measured.push_back(at.back() + 6e-6);
    probe[0].push_back(at.back() + 10e-6);
    probe[1].push_back(at.back() + 5e-6);
  }
  const NcclFitResult fit = fit_nccl_params(measured, at, x0, candidates, probe);
  REQUIRE(fit.identified.size() == 1);
  CHECK(fit.identified[0] == NcclParam::base);  // the larger effect is kept
  CHECK(fit.values[static_cast<int>(NcclParam::base)] == Approx(1.6).epsilon(1e-3));
  REQUIRE(fit.notes.size() == 1);
  CHECK(fit.notes[0].text.find("cannot tell it from") != std::string::npos);

  // Measured faster than any efficiency above 1 allows: LL's inverse efficiency stops at 1.
  std::vector<double> fast;
  std::vector<std::vector<double>> p2(1);
  std::vector<double> at2;
  for (int i = 0; i < 6; ++i) {
    at2.push_back(2e-6 * (i + 1));
    p2[0].push_back(at2.back() * 2);  // all of it scales with 1/efficiency (x0 = 2)
    fast.push_back(at2.back() * 0.2);
  }
  const NcclFitResult bounded = fit_nccl_params(fast, at2, x0, {NcclParam::efficiency_ll}, p2);
  CHECK(bounded.values[static_cast<int>(NcclParam::efficiency_ll)] == 1.0);
  CHECK(bounded.at_bound == std::vector<NcclParam>{NcclParam::efficiency_ll});
  CHECK(fit_nccl_params(at2, at2, x0, {NcclParam::efficiency_ll}, p2).at_bound.empty());  // no push
}

TEST_CASE("the NCCL fit's bounds are NCCL's values times a range, wherever a pass starts",
          "[calibrate][nccl]") {
  // A latency an earlier pass took to 0.1 of NCCL's, which the data ask to take to 0.001: the bound
  // is 0.02 of NCCL's, not 0.02 of where this pass starts.
  NcclParamValues x0 = nccl_param_defaults();
  x0[static_cast<int>(NcclParam::base)] = 0.1;
  std::vector<double> measured, at;
  std::vector<std::vector<double>> probe(1);
  for (int i = 0; i < 4; ++i) {
    const double latency = 10e-6, transfer = (i + 1) * 1e-6;  // latency at x0 = 0.1
    at.push_back(latency + transfer);
    probe[0].push_back(2 * latency + transfer);
    measured.push_back(latency / 100 + transfer);
  }
  const NcclFitResult fit = fit_nccl_params(measured, at, x0, {NcclParam::base}, probe);
  CHECK(fit.values[static_cast<int>(NcclParam::base)] == Approx(0.02));
  CHECK(fit.at_bound == std::vector<NcclParam>{NcclParam::base});
}

TEST_CASE("a fit in passes keeps what an earlier pass fitted and held at a bound", "[calibrate][nccl]") {
  // Pass one takes the network's share to a bound; pass two, around that value, finds no point that
  // moves with it (the values are the merge's to keep, whatever they are).
  NcclFitResult first;
  first.values = nccl_param_defaults();
  first.values[static_cast<int>(NcclParam::bandwidth_network)] = 0.5;
  first.values[static_cast<int>(NcclParam::base)] = 1.3;
  first.identified = {NcclParam::base, NcclParam::bandwidth_network};
  first.at_bound = {NcclParam::bandwidth_network};
  NcclFitResult second = first;
  second.values[static_cast<int>(NcclParam::base)] = 1.2;
  second.identified = {NcclParam::base};
  second.at_bound = {};
  second.notes = {{NcclParam::bandwidth_network, "bandwidth.network: doubling it moves no point"},
                  {NcclParam::hop_intra_ll, "hop_latency.intra.ll: doubling it moves no point"}};
  const NcclFitResult merged = merge_fit_passes(first, second);
  CHECK(merged.values == second.values);
  CHECK(merged.identified == std::vector<NcclParam>{NcclParam::base, NcclParam::bandwidth_network});
  CHECK(merged.at_bound == std::vector<NcclParam>{NcclParam::bandwidth_network});
  REQUIRE(merged.notes.size() == 1);
  CHECK(merged.notes[0].param == NcclParam::hop_intra_ll);

  // A later pass that moves it off the bound: fitted, no longer at the bound.
  NcclFitResult third = second;
  third.values[static_cast<int>(NcclParam::bandwidth_network)] = 0.6;
  third.identified = {NcclParam::base, NcclParam::bandwidth_network};
  third.notes.clear();
  CHECK(merge_fit_passes(merged, third).at_bound.empty());
}
