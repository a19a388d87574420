// The synthetic gradient is standard normal (moments and tail mass against the normal
// distribution's), deterministic, and different for every rank and step.
#include <catch2/catch.hpp>
#include <cmath>

#include "sim/workload/synthetic_gradient.hpp"

using namespace aggsim;

TEST_CASE("synthetic gradients are standard normal") {
  const std::int64_t n = 1'000'001;  // odd: the last value has no partner
  const Eigen::VectorXf g = synthetic_gradient(7, 3, 11, n);
  double sum = 0, squares = 0, fourth = 0;
  std::int64_t beyond_two = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    const double x = g[i];
    REQUIRE(std::isfinite(x));
    sum += x;
    squares += x * x;
    fourth += x * x * x * x;
    beyond_two += std::abs(x) > 2 ? 1 : 0;
  }
  const double mean = sum / n, variance = squares / n - mean * mean;
  // Five standard errors: sd(mean) = 1/sqrt(n), sd(variance) = sqrt(2/n), sd(m4) = sqrt(96/n).
  CHECK(std::abs(mean) < 5 / std::sqrt(double(n)));
  CHECK(std::abs(variance - 1) < 5 * std::sqrt(2.0 / n));
  CHECK(std::abs(fourth / n - 3) < 5 * std::sqrt(96.0 / n));
  const double tail = 0.04550026389635842;  // P(|X| > 2) for a standard normal
  CHECK(std::abs(double(beyond_two) / n - tail) < 5 * std::sqrt(tail * (1 - tail) / n));
}

TEST_CASE("synthetic gradients are deterministic and differ by rank and step") {
  const Eigen::VectorXf a = synthetic_gradient(7, 3, 11, 4097);
  CHECK(a == synthetic_gradient(7, 3, 11, 4097));
  CHECK(a.head(4096) == synthetic_gradient(7, 3, 11, 4096));  // a prefix does not depend on the length
  CHECK((a.array() != synthetic_gradient(7, 4, 11, 4097).array()).count() > 4000);
  CHECK((a.array() != synthetic_gradient(7, 3, 12, 4097).array()).count() > 4000);
  CHECK((a.array() != synthetic_gradient(8, 3, 11, 4097).array()).count() > 4000);
}
