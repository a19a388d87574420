// The math log (sim/metrics/math_log.hpp) against the figures computed here from every rank's
// vectors in double precision: it keeps one copy of results that are bit for bit alike and takes
// inputs before results, in any order, and none of that may change a figure.
#include <Eigen/Core>
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "sim/metrics/math_log.hpp"

namespace {

struct Figures {
  double agg_error, agg_signed_error, rank_spread;
};

// The definitions (steps.csv): e the exact average of the inputs, m the mean of the results.
Figures by_definition(const std::vector<Eigen::VectorXf>& in, const std::vector<Eigen::VectorXf>& out) {
  const auto n = static_cast<double>(in.size());
  Eigen::VectorXd e = Eigen::VectorXd::Zero(in[0].size()), m = e;
  for (const auto& x : in) e += x.cast<double>();
  for (const auto& x : out) m += x.cast<double>();
  e /= n;
  m /= n;
  Figures f{(m - e).norm() / e.norm(), (m - e).dot(e) / e.squaredNorm(), 0};
  for (const auto& x : out) f.rank_spread = std::max(f.rank_spread, (x.cast<double>() - m).norm() / m.norm());
  return f;
}

}  // namespace

TEST_CASE("The math log's figures are every rank's, whatever results it shares and whatever the order",
          "[math]") {
  const int ranks = 6;
  std::vector<Eigen::VectorXf> in, out;
  for (int r = 0; r < ranks; ++r) {
    in.push_back(
        Eigen::VectorXf::LinSpaced(9, 0.3f * static_cast<float>(r + 1), -2.1f / static_cast<float>(r + 1)));
    // Ranks 0-2 and 4-5 end with bit-identical results (two runs), rank 3 with its own.
    const float shift = r == 3 ? 0.25f : (r < 3 ? 0.0f : 0.125f);
    out.push_back(Eigen::VectorXf::LinSpaced(9, 0.9f, -1.1f) + Eigen::VectorXf::Constant(9, shift));
  }
  const Figures want = by_definition(in, out);
  const std::vector<std::vector<int>> input_orders = {
      {0, 1, 2, 3, 4, 5}, {5, 4, 3, 2, 1, 0}, {2, 0, 5, 1, 4, 3}};
  const std::vector<std::vector<int>> result_orders = {
      {0, 1, 2, 3, 4, 5}, {3, 5, 0, 4, 2, 1}, {5, 4, 3, 2, 1, 0}};
  std::vector<aggsim::StepMath> seen;
  for (const auto& inputs : input_orders)
    for (const auto& results : result_orders) {
      aggsim::ExactReduction avg;
      avg.divisor = ranks;
      aggsim::MathLog log(1, avg, std::vector<bool>(ranks, true));
      // Half the inputs first, then results and inputs interleaved: a step's figures need both.
      for (int i = 0; i < 3; ++i) log.report_input(inputs[i], 0, in[static_cast<std::size_t>(inputs[i])]);
      for (int i = 0; i < ranks; ++i) {
        CHECK_FALSE(log.steps().at(0).has_value());
        log.report_result(results[i], 0, out[static_cast<std::size_t>(results[i])], {});
        if (i + 3 < ranks) log.report_input(inputs[i + 3], 0, in[static_cast<std::size_t>(inputs[i + 3])]);
      }
      REQUIRE(log.steps().at(0).has_value());
      const aggsim::StepMath got = *log.steps().at(0);
      CHECK(got.agg_error == Approx(want.agg_error).epsilon(1e-12));
      CHECK(got.agg_signed_error == Approx(want.agg_signed_error).epsilon(1e-12));
      CHECK(got.rank_spread == Approx(want.rank_spread).epsilon(1e-12));
      seen.push_back(got);
    }
  // Rank order is kept whatever the arrival order: every run gives the same bits.
  for (const auto& s : seen) {
    CHECK(s.agg_error == seen[0].agg_error);
    CHECK(s.agg_signed_error == seen[0].agg_signed_error);
    CHECK(s.rank_spread == seen[0].rank_spread);
  }
}

TEST_CASE("Ranks that all end with the same result give the rank-by-rank figures bit for bit", "[math]") {
  // Thousands of ranks, a result whose floats span many exponents, with a negative zero and a
  // subnormal: the log sums the shared result once (ranks x), the definition rank by rank.
  const int ranks = 5000, n = 64;
  std::mt19937 gen(7);
  std::uniform_real_distribution<float> mantissa(-1.0f, 1.0f);
  std::uniform_int_distribution<int> exponent(-60, 60);
  Eigen::VectorXf shared(n);
  for (int i = 0; i < n; ++i) shared[i] = std::ldexp(mantissa(gen), exponent(gen));
  shared[3] = -0.0f;
  shared[5] = std::numeric_limits<float>::denorm_min();
  std::vector<Eigen::VectorXf> in, out(ranks, shared);
  for (int r = 0; r < ranks; ++r) in.push_back(shared + Eigen::VectorXf::Constant(n, mantissa(gen) * 1e-3f));
  const Figures want = by_definition(in, out);
  aggsim::ExactReduction avg;
  avg.divisor = ranks;
  aggsim::MathLog log(1, avg, std::vector<bool>(ranks, true));
  for (int r = 0; r < ranks; ++r) {
    log.report_input(r, 0, in[static_cast<std::size_t>(r)]);
    log.report_result(r, 0, out[static_cast<std::size_t>(r)], {});
  }
  REQUIRE(log.steps().at(0).has_value());
  const aggsim::StepMath got = *log.steps().at(0);
  CHECK(got.agg_error == want.agg_error);
  CHECK(got.agg_signed_error == want.agg_signed_error);
  CHECK(got.rank_spread == want.rank_spread);
  CHECK(got.agg_error > 0);
}
