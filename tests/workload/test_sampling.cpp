// The seeded samplers behind non-IID shards (Gamma, Dirichlet, categorical class mixes) and the
// compute model's straggler noise (exponential and lognormal multipliers, their probability,
// independence across ranks, steps and seeds), against closed-form moments within 5 standard
// errors.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <utility>
#include <vector>

#include "sim/workload/compute_model.hpp"
#include "sim/workload/dataset.hpp"
#include "sim/workload/sampling.hpp"

using namespace aggsim;

TEST_CASE("Gamma(k) draws have mean k and variance k", "[workload][sampling]") {
  for (double k : {0.1, 0.5, 1.0, 3.0, 20.0}) {
    INFO("shape " << k);
    Rng rng = make_rng(42, Stream::workload, 7, static_cast<std::uint64_t>(k * 100));
    const int n = 200000;
    double sum = 0, sum_sq = 0;
    for (int i = 0; i < n; ++i) {
      const double x = gamma_sample(rng, k);
      REQUIRE(x >= 0);
      sum += x;
      sum_sq += x * x;
    }
    const double mean = sum / n, var = sum_sq / n - mean * mean;
    // Standard error of the mean is sqrt(k / n); of the variance about sqrt((2k^2 + 6k) / n).
    CHECK(std::abs(mean - k) < 5 * std::sqrt(k / n));
    CHECK(std::abs(var - k) < 5 * std::sqrt((2 * k * k + 6 * k) / n));
  }
}

TEST_CASE("symmetric Dirichlet draws lie on the simplex with mean 1/k", "[workload][sampling]") {
  Rng rng = make_rng(3, Stream::workload, 1, 1);
  const int k = 5, n = 40000;
  const double alpha = 0.3;
  std::vector<double> mean(k, 0.0);
  double var0 = 0;
  for (int i = 0; i < n; ++i) {
    const auto p = symmetric_dirichlet(rng, k, alpha);
    double total = 0;
    for (int c = 0; c < k; ++c) {
      total += p[static_cast<std::size_t>(c)];
      mean[static_cast<std::size_t>(c)] += p[static_cast<std::size_t>(c)] / n;
    }
    var0 += (p[0] - 1.0 / k) * (p[0] - 1.0 / k) / n;
    CHECK(total == Approx(1.0).epsilon(1e-12));
  }
  for (double m : mean) CHECK(std::abs(m - 1.0 / k) < 0.01);
  // Var p_i = (1/k)(1 - 1/k) / (k alpha + 1)
  CHECK(var0 == Approx((1.0 / k) * (1 - 1.0 / k) / (k * alpha + 1)).epsilon(0.05));
}

TEST_CASE("non-IID shards concentrate each rank on few classes, IID shards are uniform",
          "[workload][sampling]") {
  WorkloadOptions o;
  o.problem = ProblemKind::softmax;
  o.classes = 10;
  o.batch = 2000;
  o.eval_samples = 10;
  const int ranks = 20;
  for (double alpha : {0.0, 0.1}) {
    INFO("noniid_alpha " << alpha);
    o.noniid_alpha = alpha;
    const SyntheticData data(o, 5);
    double top_share = 0;
    for (int r = 0; r < ranks; ++r) {
      const auto mix = data.class_mix(r);
      if (alpha == 0)
        for (double p : mix) CHECK(p == 0.1);
      // The labels of a large minibatch follow the rank's mix.
      std::vector<int> count(10, 0);
      for (int y : data.minibatch(r, 0, mix).labels) ++count[static_cast<std::size_t>(y)];
      for (int c = 0; c < 10; ++c)
        CHECK(std::abs(count[static_cast<std::size_t>(c)] / 2000.0 - mix[static_cast<std::size_t>(c)]) <
              0.05);
      top_share += *std::max_element(mix.begin(), mix.end()) / ranks;
    }
    // Dirichlet(0.1) over 10 classes puts most of a rank's mass on one class.
    if (alpha > 0) CHECK(top_share > 0.5);
  }
}

namespace {

// Sample mean and variance of n draws, and the standard errors of both: sqrt(var / n) for the
// mean, sqrt((mu4 - var^2) / n) for the variance, with the closed-form variance and fourth central
// moment mu4 of the distribution drawn from.
struct Moments {
  double mean = 0, var = 0;
};

template <class Draw>
Moments moments(int n, Draw draw) {
  double sum = 0, sum_sq = 0;
  for (int i = 0; i < n; ++i) {
    const double x = draw(i);
    sum += x;
    sum_sq += x * x;
  }
  const double mean = sum / n;
  return {mean, sum_sq / n - mean * mean};
}

void check_moments(const Moments& m, int n, double mean, double var, double mu4) {
  CHECK(std::abs(m.mean - mean) < 5 * std::sqrt(var / n));
  CHECK(std::abs(m.var - var) < 5 * std::sqrt((mu4 - var * var) / n));
}

// Fourth central moment from the raw moments E[X], ..., E[X^4].
double central4(double m1, double m2, double m3, double m4) {
  return m4 - 4 * m1 * m3 + 6 * m1 * m1 * m2 - 3 * m1 * m1 * m1 * m1;
}

constexpr int kRanks = 500, kSteps = 400;  // 200,000 (rank, step) pairs

// A straggler model's multiplier of (rank, step) pair i of the kRanks x kSteps grid.
ComputeModel straggler_model(StragglerKind kind, double sigma, double mean, double probability,
                             std::uint64_t seed = 11, SpeedFactors speed = {}) {
  StragglerOptions o;
  o.kind = kind;
  o.sigma = sigma;
  o.mean = mean;
  o.probability = probability;
  return ComputeModel(std::move(speed), o, seed);
}

double at(const ComputeModel& model, int i) {
  return model.slowdown(i % kRanks, i / kRanks);
}

}  // namespace

TEST_CASE("Exp(m) draws have mean m and variance m^2", "[workload][sampling]") {
  for (double m : {0.1, 2.0}) {
    INFO("mean " << m);
    Rng rng = make_rng(9, Stream::compute, 0, static_cast<std::uint64_t>(m * 10));
    const int n = 200000;
    // Central moments of Exp: variance m^2, fourth 9 m^4.
    check_moments(moments(n, [&](int) { return exponential_sample(rng, m); }), n, m, m * m,
                  9 * m * m * m * m);
  }
}

TEST_CASE("straggler multipliers have the moments of their distributions",
          "[workload][sampling][stragglers]") {
  const int n = kRanks * kSteps;
  for (double sigma : {0.2, 0.5}) {
    INFO("lognormal sigma " << sigma);
    // exp(sigma Z): E[X^k] = exp(k^2 sigma^2 / 2).
    const auto raw = [&](int k) { return std::exp(k * k * sigma * sigma / 2); };
    const double mean = raw(1), var = raw(2) - mean * mean;
    const ComputeModel model = straggler_model(StragglerKind::lognormal, sigma, 0, 1);
    check_moments(moments(n, [&](int i) { return at(model, i); }), n, mean, var,
                  central4(raw(1), raw(2), raw(3), raw(4)));
  }
  for (double m : {0.5, 3.0}) {
    INFO("exponential mean " << m);
    // 1 + Exp(m): mean 1 + m, variance m^2, fourth central moment 9 m^4.
    const ComputeModel model = straggler_model(StragglerKind::exponential, 0, m, 1);
    check_moments(moments(n, [&](int i) { return at(model, i); }), n, 1 + m, m * m, 9 * m * m * m * m);
  }
}

TEST_CASE("straggler noise hits a rank's step with the given probability and scales its speed",
          "[workload][sampling][stragglers]") {
  const int n = kRanks * kSteps;
  SpeedFactors speed;
  speed.slow_ranks = {3};
  speed.slow_factor = 0.25;
  for (StragglerKind kind : {StragglerKind::lognormal, StragglerKind::exponential}) {
    for (double p : {0.05, 0.3, 0.9}) {
      INFO("distribution " << static_cast<int>(kind) << ", probability " << p);
      const ComputeModel model = straggler_model(kind, 0.5, 0.5, p, 11, speed);
      int delayed = 0, faster = 0;
      for (int i = 0; i < n; ++i) {
        const int rank = i % kRanks;
        const double base = rank == 3 ? 4.0 : 1.0;  // 1 / speed factor
        const double noise = at(model, i) / base;
        if (noise != 1.0) ++delayed;
        if (noise < 1.0) ++faster;
      }
      if (kind == StragglerKind::exponential) CHECK(faster == 0);  // 1 + Exp(mean) never speeds up
      // A binomial fraction: standard error sqrt(p (1 - p) / n).
      CHECK(std::abs(static_cast<double>(delayed) / n - p) < 5 * std::sqrt(p * (1 - p) / n));
    }
  }
}

TEST_CASE("straggler noise differs across ranks, steps and seeds and repeats for a seed",
          "[workload][sampling][stragglers]") {
  for (StragglerKind kind : {StragglerKind::lognormal, StragglerKind::exponential}) {
    INFO("distribution " << static_cast<int>(kind));
    const ComputeModel a = straggler_model(kind, 0.5, 0.5, 1, 11),
                       again = straggler_model(kind, 0.5, 0.5, 1, 11),
                       other = straggler_model(kind, 0.5, 0.5, 1, 12);
    const int n = kRanks * kSteps;
    std::vector<double> xs(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) {
      xs[static_cast<std::size_t>(i)] = at(a, i);
      if (at(again, i) != xs[static_cast<std::size_t>(i)]) FAIL("pair " << i << " differs for the same seed");
    }
    // Independent draws: the sample correlation of two series is within 5 standard errors
    // (1 / sqrt(n)) of 0 between neighbouring ranks, consecutive steps, and two seeds.
    const auto correlation = [&](auto other_of) {
      const int m = n - kRanks;  // pairs whose neighbour is on the grid
      double sx = 0, sy = 0, sxx = 0, syy = 0, sxy = 0;
      for (int i = 0; i < m; ++i) {
        const double x = xs[static_cast<std::size_t>(i)], y = other_of(i);
        sx += x, sy += y, sxx += x * x, syy += y * y, sxy += x * y;
      }
      const double cov = sxy / m - sx / m * sy / m;
      return std::make_pair(cov / std::sqrt((sxx / m - sx / m * sx / m) * (syy / m - sy / m * sy / m)),
                            5 / std::sqrt(m));
    };
    const auto next_rank = correlation([&](int i) { return a.slowdown(i % kRanks + 1, i / kRanks); });
    const auto next_step = correlation([&](int i) { return xs[static_cast<std::size_t>(i + kRanks)]; });
    const auto other_seed = correlation([&](int i) { return at(other, i); });
    CHECK(std::abs(next_rank.first) < next_rank.second);
    CHECK(std::abs(next_step.first) < next_step.second);
    CHECK(std::abs(other_seed.first) < other_seed.second);
    // No two pairs share a draw.
    std::sort(xs.begin(), xs.end());
    CHECK(std::adjacent_find(xs.begin(), xs.end()) == xs.end());
  }
}
