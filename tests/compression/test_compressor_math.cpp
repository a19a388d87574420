// Compressors' math against independent references: Monte-Carlo unbiasedness, published variance
// bounds, exact selections, low-rank reproduction, ATOMO's budget, error-feedback conservation,
// and encoding formula == real encoded size.
#include <Eigen/SVD>
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <numeric>
#include <vector>

#include "algorithms/compression/atomo.hpp"
#include "algorithms/memory/compressor_with_memory.hpp"
#include "algorithms/memory/residual_memory.hpp"
#include "compressor_fixture.hpp"

using namespace aggsim;
using namespace aggsim::test;

namespace {

constexpr int kDraws = 4000;

Rng draw_rng(int draw) {
  return make_rng(99, Stream::compression, static_cast<std::uint64_t>(draw));
}

// Per-coordinate mean and standard error of decompress(compress(v)) over kDraws seeded draws.
struct MonteCarlo {
  Eigen::VectorXd mean, standard_error;
  double mean_sq_error = 0, sq_error_se = 0;  // of ||Q(v) - v||^2
};

MonteCarlo monte_carlo(Compressor& c, const Eigen::VectorXf& v, const TensorDesc& t) {
  const Eigen::Index n = v.size();
  Eigen::VectorXd sum = Eigen::VectorXd::Zero(n), sum_sq = Eigen::VectorXd::Zero(n);
  double e_sum = 0, e_sum_sq = 0;
  for (int d = 0; d < kDraws; ++d) {
    Rng rng = draw_rng(d);
    const Eigen::VectorXd q = c.decompress(c.compress(v, t, rng), t).cast<double>();
    sum += q;
    sum_sq += q.cwiseAbs2();
    const double e = (q - v.cast<double>()).squaredNorm();
    e_sum += e;
    e_sum_sq += e * e;
  }
  MonteCarlo mc;
  mc.mean = sum / kDraws;
  const Eigen::VectorXd var = (sum_sq / kDraws - mc.mean.cwiseAbs2()).cwiseMax(0.0) * kDraws / (kDraws - 1.0);
  mc.standard_error = (var / kDraws).cwiseSqrt();
  mc.mean_sq_error = e_sum / kDraws;
  mc.sq_error_se = std::sqrt(std::max(0.0, e_sum_sq / kDraws - mc.mean_sq_error * mc.mean_sq_error) / kDraws);
  return mc;
}

void check_unbiased(Compressor& c, const Eigen::VectorXf& v, const TensorDesc& t) {
  const MonteCarlo mc = monte_carlo(c, v, t);
  const double floor = 1e-4 * v.cwiseAbs().maxCoeff();  // float rounding of the encoding itself
  int outside = 0;
  for (Eigen::Index i = 0; i < v.size(); ++i) {
    const double allowed = 5 * mc.standard_error[i] + floor;
    if (std::abs(mc.mean[i] - v[i]) > allowed) {
      ++outside;
      UNSCOPED_INFO("coordinate " << i << ": mean " << mc.mean[i] << ", input " << v[i] << ", 5 SE "
                                  << allowed);
    }
  }
  CHECK(outside == 0);
}

}  // namespace

TEST_CASE("random-k, QSGD, TernGrad and ATOMO are unbiased (mean of 4000 draws within 5 SE)",
          "[compression][unbiased]") {
  const Eigen::VectorXf v = normal_vector(64, 1);
  SECTION("random-k") {
    auto c = make_compressor("randomk", {{"ratio", "0.25"}});
    REQUIRE(c->unbiased());
    check_unbiased(*c, v, same_shape(64));
  }
  SECTION("QSGD") {
    auto c = make_compressor("qsgd", {{"levels", "4"}});
    REQUIRE(c->unbiased());
    check_unbiased(*c, v, same_shape(64));
  }
  SECTION("TernGrad") {
    auto c = make_compressor("terngrad");
    REQUIRE(c->unbiased());
    check_unbiased(*c, v, same_shape(64));
  }
  SECTION("ATOMO on an 8 x 8 matrix with budget 3") {
    auto c = make_compressor("atomo", {{"budget", "3"}});
    REQUIRE(c->unbiased());
    check_unbiased(*c, v, same_shape(8, 8));
  }
}

TEST_CASE("QSGD variance: E||Q(v)-v||^2 <= min(n/s^2, sqrt(n)/s) ||v||^2 and equals its exact value",
          "[compression][variance]") {
  for (int n : {16, 1024}) {
    for (int s : {1, 4, 64}) {
      INFO("n " << n << ", s " << s);
      const Eigen::VectorXf v = normal_vector(n, 2 + n);
      auto c = make_compressor("qsgd", {{"levels", std::to_string(s)}});
      const MonteCarlo mc = monte_carlo(*c, v, same_shape(n));
      const double norm2 = v.cast<double>().squaredNorm();
      const double bound = std::min(n / double(s * s), std::sqrt(double(n)) / s) * norm2;
      CHECK(mc.mean_sq_error <= bound);
      // Exact: each coordinate rounds r = s|v_i|/||v|| up with probability frac(r).
      double exact = 0;
      for (int i = 0; i < n; ++i) {
        const double r = s * std::abs(double(v[i])) / std::sqrt(norm2), f = r - std::floor(r);
        exact += norm2 / (s * s) * f * (1 - f);
      }
      CHECK(std::abs(mc.mean_sq_error - exact) <= 5 * mc.sq_error_se + 1e-6 * norm2);
    }
  }
}

TEST_CASE("scaled random-k has variance factor d/k - 1", "[compression][variance]") {
  const int d = 200;
  const Eigen::VectorXf v = normal_vector(d, 3);
  for (int k : {1, 20, 100, 200}) {
    INFO("k " << k);
    auto c = make_compressor("randomk", {{"k", std::to_string(k)}});
    const MonteCarlo mc = monte_carlo(*c, v, same_shape(d));
    const double expected = (double(d) / k - 1) * v.cast<double>().squaredNorm();
    CHECK(std::abs(mc.mean_sq_error - expected) <= 5 * mc.sq_error_se + 1e-9);
  }
}

TEST_CASE("top-k keeps exactly the k largest magnitudes", "[compression][topk]") {
  // 1000 values go straight to nth_element; 2^17 values take the sampled-bound path first.
  for (int n : {1000, 1 << 17}) {
    const Eigen::VectorXf v = normal_vector(n, 4);
    std::vector<int> order(static_cast<std::size_t>(n));
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](int a, int b) { return std::abs(v[a]) > std::abs(v[b]); });
    for (int k : {1, 37, 500, n / 7, n}) {
      INFO("n " << n << ", k " << k);
      auto c = make_compressor("topk", {{"k", std::to_string(k)}});
      Rng rng = draw_rng(0);
      const Eigen::VectorXf out = c->decompress(c->compress(v, same_shape(n), rng), same_shape(n));
      Eigen::VectorXf expected = Eigen::VectorXf::Zero(n);
      for (int i = 0; i < k; ++i)
        expected[order[static_cast<std::size_t>(i)]] = v[order[static_cast<std::size_t>(i)]];
      CHECK((out - expected).cwiseAbs().maxCoeff() == 0.0f);
      CHECK((out.array() != 0).count() == k);
    }
  }
}

TEST_CASE("PowerSGD reproduces an exactly rank-r matrix and warm starts converge to the best rank-r",
          "[compression][powersgd]") {
  const int m = 30, n = 20, r = 2;
  const TensorDesc t = same_shape(m, n);
  auto c = make_compressor("powersgd", {{"rank", "2"}, {"reuse_query", "true"}});
  SECTION("exactly rank r") {
    const Eigen::MatrixXf a = Eigen::Map<const Eigen::MatrixXf>(normal_vector(m * r, 5).data(), m, r);
    const Eigen::MatrixXf b = Eigen::Map<const Eigen::MatrixXf>(normal_vector(n * r, 6).data(), n, r);
    const Eigen::MatrixXf mat = a * b.transpose();
    const Eigen::VectorXf v = Eigen::Map<const Eigen::VectorXf>(mat.data(), m * n);
    for (int step = 0; step < 5; ++step) {
      Rng rng = draw_rng(step);
      const Eigen::VectorXf out = c->decompress(c->compress(v, t, rng), t);
      INFO("step " << step);
      CHECK((out - v).norm() <= 1e-5 * v.norm());
    }
  }
  SECTION("rank r + 3: warm-started power iteration reaches the truncated SVD's error") {
    const Eigen::MatrixXf a = Eigen::Map<const Eigen::MatrixXf>(normal_vector(m * 5, 7).data(), m, 5);
    Eigen::MatrixXf b = Eigen::Map<const Eigen::MatrixXf>(normal_vector(n * 5, 8).data(), n, 5);
    for (int j = 0; j < 5; ++j) b.col(j) *= std::pow(0.5f, static_cast<float>(j));  // a decaying spectrum
    const Eigen::MatrixXf mat = a * b.transpose();
    const Eigen::VectorXf v = Eigen::Map<const Eigen::VectorXf>(mat.data(), m * n);
    const Eigen::JacobiSVD<Eigen::MatrixXd> svd(mat.cast<double>());
    const Eigen::VectorXd sigma = svd.singularValues();
    const double best = std::sqrt(sigma.tail(sigma.size() - r).squaredNorm());  // Eckart-Young
    double error = 0;
    for (int step = 0; step < 30; ++step) {
      Rng rng = draw_rng(step);
      error = (c->decompress(c->compress(v, t, rng), t) - v).norm();
    }
    CHECK(error == Approx(best).epsilon(1e-3));
  }
}

TEST_CASE("ATOMO's expected number of atoms equals the budget", "[compression][atomo]") {
  SECTION("the probabilities sum to the budget, each in [0, 1]") {
    const Eigen::VectorXf raw = normal_vector(12, 9).cwiseAbs();
    std::vector<double> sigma(raw.data(), raw.data() + raw.size());
    sigma[0] = 50;  // one dominant atom, which must be capped at probability 1
    for (double budget : {1.0, 2.0, 3.5, 7.0, 11.0}) {
      INFO("budget " << budget);
      const auto p = atomo_probabilities(sigma, budget);
      CHECK(std::accumulate(p.begin(), p.end(), 0.0) == Approx(budget).epsilon(1e-12));
      for (double x : p) CHECK((x >= 0 && x <= 1));
      // Capped exactly when the uncapped share budget * 50 / sum(sigma) would exceed 1.
      if (budget * 50 >= std::accumulate(sigma.begin(), sigma.end(), 0.0))
        CHECK(p[0] == 1.0);
      else
        CHECK(p[0] < 1.0);
    }
    const auto all = atomo_probabilities(sigma, 20);
    for (double x : all) CHECK(x == 1.0);
  }
  SECTION("the probabilities minimise the variance sum sigma_i^2 / p_i under the budget") {
    // KKT conditions of min sum sigma_i^2 / p_i subject to sum p_i = s, 0 < p_i <= 1: below the cap
    // p_i = c sigma_i with one constant c, and an atom is capped exactly when c sigma_i >= 1. Then
    // no feasible transfer of probability between two atoms lowers the variance.
    const Eigen::VectorXf raw = normal_vector(12, 19).cwiseAbs();
    std::vector<double> sigma(raw.data(), raw.data() + raw.size());
    sigma[3] = 40;
    sigma[7] = 25;
    const auto variance = [&](const std::vector<double>& p) {
      double v = 0;
      for (std::size_t i = 0; i < p.size(); ++i) v += sigma[i] * sigma[i] / p[i];
      return v;
    };
    for (double budget : {1.0, 2.0, 3.5, 7.0}) {
      INFO("budget " << budget);
      const auto p = atomo_probabilities(sigma, budget);
      double c = -1;
      for (std::size_t i = 0; i < p.size(); ++i)
        if (p[i] < 1.0) {
          if (c < 0) c = p[i] / sigma[i];
          CHECK(p[i] / sigma[i] == Approx(c).epsilon(1e-12));
        }
      for (std::size_t i = 0; i < p.size(); ++i) CHECK((p[i] == 1.0) == (c * sigma[i] >= 1.0 - 1e-12));
      const double best = variance(p);
      for (std::size_t i = 0; i < p.size(); ++i)
        for (std::size_t j = 0; j < p.size(); ++j) {
          const double eps = 1e-3 * std::min(p[i], 1.0 - p[j]);
          if (i == j || eps <= 0) continue;
          std::vector<double> q = p;
          q[i] -= eps;
          q[j] += eps;
          CHECK(variance(q) >= best * (1 - 1e-12));
        }
    }
  }
  SECTION("the mean number of atoms sent over 4000 draws is within 5 SE of the budget") {
    const Eigen::VectorXf v = normal_vector(16 * 12, 10);
    const TensorDesc t = same_shape(16, 12);
    for (double budget : {2.0, 4.5}) {
      auto c = make_compressor("atomo", {{"budget", std::to_string(budget)}});
      double sum = 0, sum_sq = 0;
      for (int d = 0; d < kDraws; ++d) {
        Rng rng = draw_rng(d);
        const double atoms = static_cast<double>(c->compress(v, t, rng).scales.size());
        sum += atoms;
        sum_sq += atoms * atoms;
      }
      const double mean = sum / kDraws, se = std::sqrt((sum_sq / kDraws - mean * mean) / kDraws);
      INFO("budget " << budget << ", mean " << mean << ", SE " << se);
      CHECK(std::abs(mean - budget) <= 5 * se);
    }
  }
}

TEST_CASE("error feedback conserves mass: sum sent + final residual = sum inputs",
          "[compression][error_feedback]") {
  for (const std::string name : {"topk", "qsgd", "sign", "randomk"}) {
    INFO(name);
    CompressorWithMemory ef(make_compressor(name), std::make_unique<ResidualMemory>());
    const TensorDesc t = same_shape(500);
    Eigen::VectorXd inputs = Eigen::VectorXd::Zero(500), sent = Eigen::VectorXd::Zero(500);
    for (int step = 0; step < 20; ++step) {
      const Eigen::VectorXf g = normal_vector(500, 100 + step);
      Rng rng = draw_rng(step);
      inputs += g.cast<double>();
      sent += ef.decompress(ef.compress(g, t, rng), t).cast<double>();
    }
    const auto& memory = dynamic_cast<const ResidualMemory&>(ef.memory());
    REQUIRE(memory.residual(0) != nullptr);
    const Eigen::VectorXd residual = memory.residual(0)->cast<double>();
    // Float rounding only, relative to the largest quantity summed (random-k's d/k scaling makes
    // individual sends and residuals much larger than the inputs).
    const double scale =
        std::max({inputs.cwiseAbs().maxCoeff(), sent.cwiseAbs().maxCoeff(), residual.cwiseAbs().maxCoeff()});
    CHECK((sent + residual - inputs).cwiseAbs().maxCoeff() <= 1e-5 * 20 * scale);
  }
}

TEST_CASE("each compressor's wire size equals the real size of its encoding when the shapes coincide",
          "[compression][formula]") {
  const std::vector<std::pair<std::string, std::map<std::string, std::string>>> cases = {
      {"none", {}},
      {"topk", {}},
      {"topk", {{"k", "77"}}},
      {"randomk", {}},
      {"randomk", {{"shared_seed", "true"}}},
      {"threshold", {{"threshold", "0.8"}}},
      {"qsgd", {}},
      {"qsgd", {{"levels", "5"}, {"bucket", "100"}}},
      {"terngrad", {}},
      {"sign", {}},
      {"fp16", {}},
      {"uint8", {}},
      {"powersgd", {}},
      {"powersgd", {{"rank", "7"}}},
      {"atomo", {}},
      {"topk", {{"error_feedback", "true"}}}};
  // A matrix and a flat vector (powersgd / atomo view it as 39 x 39, zero-padded), odd sizes for the bit
  // packing.
  for (const TensorDesc& t : {same_shape(48, 31), same_shape(1517)}) {
    const Eigen::VectorXf v = normal_vector(t.proxy.size(), 11);
    for (const auto& [name, params] : cases) {
      INFO(name << " " << params.size() << " overrides, shape " << t.proxy.rows << " x " << t.proxy.cols);
      auto c = make_compressor(name, params);
      Rng rng = draw_rng(1);
      const Payload p = c->compress(v, t, rng);
      CHECK(p.wire_bytes == payload_data_bytes(p, c->value_bytes()));
      if (name != "threshold" && name != "atomo") CHECK(p.wire_bytes == c->encoded_bytes(t.wire));
      // With math off, the formula alone gives the wire size.
      Rng rng2 = draw_rng(1);
      const TensorDesc off{{0, 1}, t.wire, 0, {}};
      CHECK(c->compress(Eigen::VectorXf(), off, rng2).wire_bytes == c->encoded_bytes(t.wire));
    }
  }
}

TEST_CASE("sign compression aggregates by majority vote scaled by the op over the ranks' scales",
          "[compression][sign]") {
  auto c = make_compressor("sign");
  const TensorDesc t = same_shape(5);
  std::vector<Eigen::VectorXf> inputs(3, Eigen::VectorXf(5));
  inputs[0] << 1, -1, 1, -1, 2;   // mean magnitude 1.2
  inputs[1] << 1, 1, -1, -1, -2;  // 1.2
  inputs[2] << -3, 3, 3, -3, -3;  // 3
  std::vector<Payload> payloads;
  for (const auto& v : inputs) {
    Rng rng = draw_rng(0);
    payloads.push_back(c->compress(v, t, rng));
  }
  Eigen::VectorXf expected(5);
  expected << 1.8f, 1.8f, 1.8f, -1.8f, -1.8f;  // votes + + + - -, mean scale (1.2 + 1.2 + 3) / 3
  CHECK((c->reduce(payloads, t, ReduceOp{ReduceKind::avg}) - expected).cwiseAbs().maxCoeff() <= 1e-6f);
  payloads.pop_back();  // two ranks: ties where they disagree
  Eigen::VectorXf tie(5);
  tie << 1.2f, 0, 0, -1.2f, 0;
  CHECK((c->reduce(payloads, t, ReduceOp{ReduceKind::avg}) - tie).cwiseAbs().maxCoeff() <= 1e-6f);
}
