// PowerSGD factors each proxy tensor on its own (as PyTorch's powerSGD_hook and mlbench's
// PowerAggregation factor each parameter tensor): a gradient holding several tensors gives each
// matrix its own P_i = M_i Q_i, orthogonalised on its own, and sends its vectors exactly; by model
// and by layer then compute the same approximation and send the same bytes.
#include <fmt/format.h>

#include <Eigen/Dense>
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "compressor_fixture.hpp"
#include "support/cli.hpp"
#include "support/reduction_check.hpp"

using namespace aggsim;
using namespace aggsim::test;
namespace fs = std::filesystem;

namespace {

// The by-hand rank-r approximation of one m x n tensor (column-major in `v`) from the starting
// query `q0`: P = M Q0, orthonormalised by Householder QR (Gram-Schmidt up to column signs, which
// cancel in P P^T), Q = M^T P, result P Q^T = P P^T M.
Eigen::MatrixXd by_hand(const Eigen::VectorXf& v, Eigen::Index m, Eigen::Index n, const Eigen::MatrixXd& q0) {
  const Eigen::MatrixXd mat = Eigen::Map<const Eigen::MatrixXf>(v.data(), m, n).cast<double>();
  const Eigen::MatrixXd p0 = mat * q0;
  const Eigen::MatrixXd p =
      Eigen::HouseholderQR<Eigen::MatrixXd>(p0).householderQ() * Eigen::MatrixXd::Identity(m, q0.cols());
  const Eigen::MatrixXd q = mat.transpose() * p;
  return p * q.transpose();
}

// n x r standard normal draws from `rng`, column-major (PowerSGD's fresh query).
Eigen::MatrixXd draw_query(Rng& rng, Eigen::Index n, Eigen::Index r) {
  Eigen::MatrixXd q(n, r);
  for (Eigen::Index i = 0; i < q.size(); ++i) q.data()[i] = static_cast<float>(standard_normal(rng));
  return q;
}

}  // namespace

TEST_CASE("PowerSGD compresses each proxy tensor on its own: matrices by hand, vectors exactly") {
  // fc1.weight 12 x 8, fc1.bias 12, fc2.weight 5 x 12 (column-major, in memory order), rank 2:
  // (12 + 8) 2 < 96 and (5 + 12) 2 < 60, so both matrices are factored; the bias goes dense.
  const std::int64_t r = 2;
  const Eigen::Index n = 96 + 12 + 60;
  const Eigen::VectorXf v = normal_vector(n, 17);
  TensorDesc t{{n, 1}, WireLayout::flat(n), 0, {}};
  t.proxy_layout.pieces = {{{12, 8}, false}, {{12, 1}, true}, {{5, 12}, false}};
  auto c = make_compressor("powersgd", {{"rank", std::to_string(r)}});
  Rng rng = make_rng(3, Stream::compression);
  Rng mine = rng;  // the same stream: the queries are drawn tensor by tensor, in order
  const Payload p = c->compress(v, t, rng);
  const Eigen::VectorXf out = c->decompress(p, t);
  REQUIRE(out.size() == n);

  // The payload is the factors of each matrix plus the bias: (12 + 8) r + 12 + (5 + 12) r values.
  CHECK(p.values.size() == (12 + 8) * r + 12 + (5 + 12) * r);
  const Eigen::MatrixXd q1 = draw_query(mine, 8, r);
  const Eigen::MatrixXd q2 = draw_query(mine, 12, r);
  const Eigen::MatrixXd a1 = by_hand(v.segment(0, 96), 12, 8, q1);
  const Eigen::MatrixXd a2 = by_hand(v.segment(108, 60), 5, 12, q2);
  const Eigen::VectorXd got = out.cast<double>();
  CHECK((Eigen::Map<const Eigen::VectorXd>(got.data(), 96) - Eigen::Map<const Eigen::VectorXd>(a1.data(), 96))
            .cwiseAbs()
            .maxCoeff() < 1e-4);
  CHECK((Eigen::Map<const Eigen::VectorXd>(got.data() + 108, 60) -
         Eigen::Map<const Eigen::VectorXd>(a2.data(), 60))
            .cwiseAbs()
            .maxCoeff() < 1e-4);
  CHECK(out.segment(96, 12) == v.segment(96, 12));  // the bias, bit for bit

  // fc1.weight's approximation has rank r in its own 12 x 8 shape.
  const Eigen::MatrixXf m1 = Eigen::Map<const Eigen::MatrixXf>(out.data(), 12, 8);
  CHECK(Eigen::FullPivLU<Eigen::MatrixXf>(m1).setThreshold(1e-4).rank() == r);

  // The old flat view of the same values (no layout) gives a different result.
  const TensorDesc flat{{n, 1}, WireLayout::flat(n), 0, {}};
  auto c2 = make_compressor("powersgd", {{"rank", std::to_string(r)}});
  Rng rng2 = make_rng(3, Stream::compression);
  const Eigen::VectorXf flat_out = c2->decompress(c2->compress(v, flat, rng2), flat);
  CHECK((flat_out - out).cwiseAbs().maxCoeff() > 1e-2);
}

TEST_CASE("PowerSGD warm starts each proxy tensor from its own previous query") {
  // Two steps on the same tensors with reuse_query: the second starts from each tensor's Q of the
  // first (one step of subspace iteration more), so it equals the by-hand two-step iteration.
  const std::int64_t r = 1;
  const Eigen::VectorXf v = normal_vector(30 + 4 + 42, 23);
  TensorDesc t{{76, 1}, WireLayout::flat(76), 5, {}};
  t.proxy_layout.pieces = {{{6, 5}, false}, {{4, 1}, true}, {{7, 6}, false}};
  auto c = make_compressor("powersgd", {{"rank", "1"}});
  Rng rng = make_rng(9, Stream::compression);
  Rng mine = rng;
  c->compress(v, t, rng);
  Rng unused = make_rng(10, Stream::compression);  // warm start: no fresh draws
  const Eigen::VectorXf out = c->decompress(c->compress(v, t, unused), t);
  // Rank 1: after two steps the result is p p^T M with p = normalised M (M^T M) q0.
  const auto expect = [&](Eigen::Index off, Eigen::Index m, Eigen::Index n, const Eigen::MatrixXd& q0) {
    const Eigen::MatrixXd mat = Eigen::Map<const Eigen::MatrixXf>(v.data() + off, m, n).cast<double>();
    Eigen::MatrixXd p = mat * (mat.transpose() * (mat * q0));
    p /= p.norm();
    return Eigen::MatrixXd(p * (p.transpose() * mat));
  };
  const Eigen::MatrixXd q1 = draw_query(mine, 5, r);
  const Eigen::MatrixXd q2 = draw_query(mine, 6, r);
  const Eigen::MatrixXd a1 = expect(0, 6, 5, q1), a2 = expect(34, 7, 6, q2);
  const Eigen::VectorXd got = out.cast<double>();
  CHECK((got.segment(0, 30) - Eigen::Map<const Eigen::VectorXd>(a1.data(), 30)).cwiseAbs().maxCoeff() < 1e-4);
  CHECK((got.segment(34, 42) - Eigen::Map<const Eigen::VectorXd>(a2.data(), 42)).cwiseAbs().maxCoeff() <
        1e-4);
  CHECK(out.segment(30, 4) == v.segment(30, 4));
}

namespace {

// Three linear layers with biases (in forward order): 512 x 256, 256 x 256, 10 x 256.
const char* kTable = R"(name: three_linear
layers:
  - {name: fc1, shape: [512, 256], params: 131584, forward_flops: 262144}
  - {name: fc2, shape: [256, 256], params: 65792, forward_flops: 131072}
  - {name: fc3, shape: [10, 256], params: 2570, forward_flops: 5120}
)";

// The MLP proxy (fc1.weight 48 x 24, fc1.bias, fc2.weight 10 x 48, fc2.bias) trained with rank-2
// PowerSGD on a ring all-reduce, aggregated as `algorithm` says.
std::string mlp_scenario(int seed, const std::string& algorithm) {
  return fmt::format(R"(name: per_tensor
seed: {}
ranks: 4
steps: 40
platform: {{topology: cluster, hosts: 4, bandwidth: 10Gbps, latency: 1us, speed: 10Tf}}
network: alpha_beta
model: {{layers: table.yaml, batch: 32}}
algorithm: {{name: ring_allreduce, {}}}
compression: {{name: powersgd, rank: 2}}
workload: {{problem: mlp, dim: 24, hidden: 48, classes: 10, batch: 32, lr: 0.1, momentum: 0.9, eval_every: 40}}
)",
                     seed, algorithm);
}

struct Outcome {
  std::vector<std::uint64_t> bytes;  // per step, all ranks
  double final_loss = 0;
};

Outcome run_cli(const std::string& yaml) {
  const auto dir = fresh_dir("powersgd-per-tensor");
  write_file(dir / "table.yaml", kTable);
  write_file(dir / "s.yaml", yaml);
  const auto r = run_aggsim({"run", "s.yaml", "--out", "run", "-q"}, dir);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  Outcome out;
  std::istringstream in(read_file(dir / "run" / "steps.csv"));
  std::string line;
  std::getline(in, line);
  REQUIRE(line.rfind("step,step_time_s,comm_time_s,compute_time_s,end_time_s,bytes_sent,", 0) == 0);
  while (std::getline(in, line)) {
    std::vector<std::string> cells;
    std::stringstream ss(line);
    for (std::string c; std::getline(ss, c, ',');) cells.push_back(c);
    out.bytes.push_back(std::stoull(cells.at(5)));
  }
  out.final_loss = nlohmann::json::parse(read_file(dir / "run" / "summary.json"))["final_loss"].get<double>();
  fs::remove_all(dir);
  return out;
}

}  // namespace

TEST_CASE("PowerSGD with a workload sends the same bytes and reaches the same loss by model and by layer") {
  // Wire: fc1 512 x 256 and fc2 256 x 256 are factored (P 2 m, Q 2 n), fc3 10 x 256 too ((10 + 256) 2
  // < 2560), the biases (512 + 256 + 10) go dense: N = 1024 + 512 + 512 + 512 + 20 + 512 + 778
  // values per step, whatever the bucketing. A ring all-reduce of n values has the 4 ranks send
  // 2 (p - 1) n values in all, so every step sends 2 * 3 * 4 * N bytes.
  const std::uint64_t expected_bytes = 2 * 3 * 4 * (1024 + 512 + 512 + 512 + 20 + 512 + 778);
  const std::vector<int> seeds = {1, 2, 3, 4, 5};
  std::vector<double> model, layer, layer_pairs;
  for (int seed : seeds) {
    const Outcome m = run_cli(mlp_scenario(seed, "granularity: model"));
    // One bucket per layer: the MLP's four tensors spread over three buckets, fc2's two together.
    const Outcome l0 = run_cli(mlp_scenario(seed, "granularity: layer, bucket: 0B"));
    // Buckets {fc3, fc2} and {fc1}: two tensors in each.
    const Outcome l1 = run_cli(mlp_scenario(seed, "granularity: layer, bucket: 200kB"));
    REQUIRE(m.bytes.size() == 40);
    CHECK(m.bytes == l0.bytes);
    CHECK(m.bytes == l1.bytes);
    CHECK(m.bytes == std::vector<std::uint64_t>(40, expected_bytes));
    model.push_back(m.final_loss);
    layer.push_back(l0.final_loss);
    layer_pairs.push_back(l1.final_loss - l0.final_loss);
  }
  // Run-to-run noise: the two by-layer bucketings compute the same per-tensor approximation and
  // differ only in their starting queries (each bucket draws from its own stream), so their
  // difference per seed measures what the random draws alone do to the final loss: variance
  // s^2 = mean(d^2) / 2 per run (measured: s ~ 0.005, against ~0.4 between seeds). By model
  // differs from by layer in the draws only, so |model - layer| per seed has standard deviation
  // sqrt(2) s; allow 4 of them (runs are deterministic per seed, so the check cannot flake).
  double sq = 0;
  for (double d : layer_pairs) sq += d * d;
  const double s = std::sqrt(sq / static_cast<double>(layer_pairs.size()) / 2.0);
  const double tolerance = 4.0 * std::sqrt(2.0) * s;
  const auto [lo, hi] = std::minmax_element(layer.begin(), layer.end());
  INFO("noise s = " << s << ", tolerance " << tolerance << ", spread between seeds " << *hi - *lo);
  REQUIRE(s > 0);
  CHECK(tolerance < 0.25 * (*hi - *lo));  // the check is much finer than the seeds' spread
  for (std::size_t i = 0; i < seeds.size(); ++i) {
    INFO("seed " << seeds[i] << ": by model " << model[i] << ", by layer " << layer[i]);
    CHECK(std::abs(model[i] - layer[i]) <= tolerance);
  }
}

namespace {

// Runs one step of rank-2 PowerSGD (no error feedback) on the MLP with 4 ranks in a child and, for
// each of the MLP's tensors, compares every rank's result with the exact reduction R of the
// ranks' gradients (in double): a weight W must be of rank 2 and equal U U^T R for U the
// orthonormal basis of W's columns (PowerSGD's P P^T R: the reduced Q is R^T P); a bias must be R.
// Returns the worst relative errors "weight bias rank3" (rank3: sigma_3 / sigma_1 of W).
std::string per_tensor_errors(const std::string& layers, const std::string& algorithm) {
  const std::string yaml = fmt::format(R"(name: per_tensor_step
seed: 11
ranks: 4
steps: 2
platform: {{topology: cluster, hosts: 4, bandwidth: 10Gbps, latency: 1us, speed: 10Tf}}
network: alpha_beta
model: {{layers: {}, batch: 32}}
algorithm: {{name: ring_allreduce, op: avg, {}}}
compression: {{name: powersgd, rank: 2, reuse_query: false}}
workload: {{problem: mlp, dim: 24, hidden: 48, classes: 10, batch: 32, lr: 0.1}}
)",
                                       layers, algorithm);
  return run_isolated([&] {
    const Scenario sc = load_scenario_text(yaml, "test.yaml");
    const Captured run = simulate_capturing(sc);
    // The MLP's tensors (PyTorch's parameters() order, column-major): fc1.weight, fc1.bias,
    // fc2.weight, fc2.bias.
    struct Tensor {
      Eigen::Index offset, rows, cols;
    };
    const std::vector<Tensor> tensors = {{0, 48, 24}, {1152, 48, 1}, {1200, 10, 48}, {1680, 10, 1}};
    double weight = 0, bias = 0, rank3 = 0;
    for (const auto& [step, inputs] : run.before) {
      const Eigen::VectorXd exact = direct_reduction(inputs, sc.algorithm.op);
      if (exact.size() != 1690) return std::string("unexpected proxy size");
      for (const Eigen::VectorXf& out : run.after.at(step))
        for (const Tensor& t : tensors) {
          const Eigen::Map<const Eigen::MatrixXd> r(exact.data() + t.offset, t.rows, t.cols);
          const Eigen::MatrixXd w =
              Eigen::Map<const Eigen::MatrixXf>(out.data() + t.offset, t.rows, t.cols).cast<double>();
          if (t.cols == 1) {
            bias = std::max(bias, (w - r).norm() / r.norm());
            continue;
          }
          const Eigen::JacobiSVD<Eigen::MatrixXd> svd(w, Eigen::ComputeThinU);
          const Eigen::MatrixXd u = svd.matrixU().leftCols(2);
          rank3 = std::max(rank3, svd.singularValues()(2) / svd.singularValues()(0));
          weight = std::max(weight, (w - u * (u.transpose() * r)).norm() / r.norm());
        }
    }
    return fmt::format("{} {} {}", weight, bias, rank3);
  });
}

}  // namespace

TEST_CASE(
    "PowerSGD's aggregation gives each MLP tensor its own rank-r approximation, by model and by layer") {
  // Layers norm1, fc1, norm2, fc2: by layer the buckets are fc2, norm2, fc1, norm1 in order, and
  // the MLP's fc2.weight lands in norm2's bucket, which has nothing to factor on the wire (reduced
  // dense once, approximated from the sum).
  const auto dir = fresh_dir("powersgd-norm-table");
  write_file(dir / "table.yaml", R"(name: with_norms
layers:
  - {name: norm1, shape: [96], forward_flops: 0}
  - {name: fc1, shape: [256, 64], params: 16640, forward_flops: 0}
  - {name: norm2, shape: [64], forward_flops: 0}
  - {name: fc2, shape: [32, 288], params: 9280, forward_flops: 0}
)");
  const std::string resnet18 = std::string(AGGSIM_SOURCE_DIR) + "/scenarios/models/resnet18.yaml";
  const std::string norms = (dir / "table.yaml").string();
  for (const auto& [layers, algorithm] :
       std::vector<std::pair<std::string, std::string>>{{resnet18, "granularity: model"},
                                                        {resnet18, "granularity: layer, bucket: 0B"},
                                                        {norms, "granularity: model"},
                                                        {norms, "granularity: layer, bucket: 0B"}}) {
    INFO(layers << ", " << algorithm);
    std::istringstream in(per_tensor_errors(layers, algorithm));
    double weight = 1, bias = 1, rank3 = 1;
    REQUIRE(in >> weight >> bias >> rank3);
    CHECK(rank3 < 1e-5);   // each weight matrix has rank 2 (float round-off beyond)
    CHECK(weight < 1e-5);  // ... and is the reduced matrix projected on its own subspace
    CHECK(bias < 1e-6);    // biases are reduced exactly (float sums in another order)
  }
  fs::remove_all(dir);
}
