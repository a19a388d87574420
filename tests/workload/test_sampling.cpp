// The seeded samplers behind non-IID shards and straggler noise, against their known moments.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>

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

TEST_CASE("non-IID shards concentrate each rank on few classes; IID shards are uniform",
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
