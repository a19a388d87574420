// The per-step least-squares fit against times built from known factors (T = x*lat + y*bw).
#include <catch2/catch.hpp>

#include "sim/calibrate/factor_fit.hpp"

using namespace aggsim;

TEST_CASE("a step with latency- and bandwidth-bound points recovers both factors", "[fit]") {
  // Two steps: messages < 64KiB (true factors latency x3, bandwidth x0.5), >= 64KiB (x1.5, x0.8).
  std::vector<ProbeRow> rows;
  for (double m : {1e3, 8e3, 32e3, 1e5, 1e6, 1e7}) {
    const bool small = m < 65536;
    const double x = small ? 3.0 : 1.5, bw = small ? 0.5 : 0.8;
    const double lat = 14e-6, bwpart = m / 10e9 * 14;  // a 8-rank ring's 14 hops at 10 GB/s
    rows.push_back({m, x * lat + bwpart / bw, lat, bwpart});
  }
  const FactorFit fit = fit_factors(rows, {65536}, "intra-node");
  REQUIRE(fit.table.steps.size() == 2);
  CHECK(fit.table.steps[0].from_bytes == 0);
  CHECK(fit.table.steps[1].from_bytes == 65536);
  CHECK(fit.table.steps[0].latency == Approx(3.0).epsilon(1e-9));
  CHECK(fit.table.steps[0].bandwidth == Approx(0.5).epsilon(1e-9));
  CHECK(fit.table.steps[1].latency == Approx(1.5).epsilon(1e-9));
  CHECK(fit.table.steps[1].bandwidth == Approx(0.8).epsilon(1e-9));
  CHECK(fit.points == std::vector<int>{3, 3});
  CHECK(fit.notes.empty());
}

TEST_CASE("a step without points copies its neighbour and says so", "[fit]") {
  std::vector<ProbeRow> rows = {{2e6, 2.1e-3, 1e-5, 1e-3}, {4e6, 4.1e-3, 1e-5, 2e-3}};  // x = 10, y = 2
  const FactorFit fit = fit_factors(rows, {4096, 1 << 20}, "inter-node");
  REQUIRE(fit.table.steps.size() == 3);
  CHECK(fit.points == std::vector<int>{0, 0, 2});
  CHECK(fit.table.steps[0].bandwidth == Approx(fit.table.steps[2].bandwidth));
  CHECK(fit.table.steps[1].latency == Approx(fit.table.steps[2].latency));
  CHECK(fit.table.steps[2].latency == Approx(10));
  CHECK(fit.table.steps[2].bandwidth == Approx(0.5));
  REQUIRE(fit.notes.size() == 2);
  CHECK(fit.notes[0].find("inter-node messages 0B to 4KiB: no measured point") != std::string::npos);
}

TEST_CASE("one point cannot separate latency from bandwidth: one factor moves, the other is reported",
          "[fit]") {
  // Bandwidth-dominated single point, 25 % slower than simulated.
  const FactorFit fit = fit_factors({{1e8, 1.25e-2, 1e-6, 1e-2 - 1e-6}}, {}, "inter-node");
  REQUIRE(fit.table.steps.size() == 1);
  const auto& s = fit.table.steps[0];
  CHECK(s.latency * 1e-6 + (1e-2 - 1e-6) / s.bandwidth == Approx(1.25e-2).epsilon(1e-9));
  REQUIRE(fit.notes.size() == 1);
  CHECK(fit.notes[0].find("latency not identified") != std::string::npos);
}
