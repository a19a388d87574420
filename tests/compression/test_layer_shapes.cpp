// Modeled layer shapes on the wire: a layer table's weight matrices and 1-D vectors reach each
// compressor's formula piece by piece, by model and by layer; every bucket of a step draws its own
// compression randomness (shared-seed random-k stays shared across ranks); reruns are identical.
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <map>
#include <sstream>
#include <tuple>

#include "algorithms/compression/low_rank.hpp"
#include "compressor_fixture.hpp"
#include "support/cli.hpp"
#include "support/reduction_check.hpp"
#include "support/simulate_capturing.hpp"

using namespace aggsim;
using namespace aggsim::test;

namespace {

// One modeled piece as the test sees it: rows x cols, or a 1-D vector of rows values.
struct Piece {
  std::int64_t rows, cols;
  bool vector;
};

// A linear layer 256 x 64 with a 256-long bias; a 3x3 convolution 32 -> 32 flattened to
// out x in*kh*kw = 32 x 288 carrying its batch norm's scale and shift (64 values); a norm layer.
const std::vector<Piece> kPieces = {
    {256, 64, false}, {256, 1, true}, {32, 288, false}, {64, 1, true}, {96, 1, true}};

std::string write_table() {
  const auto path = fresh_dir("layer-shapes") / "table.yaml";
  write_file(path, R"(name: shapes
layers:
  - {name: fc, shape: [256, 64], params: 16640, forward_flops: 0}
  - {name: conv, shape: [32, 288], params: 9280, forward_flops: 0}
  - {name: norm, shape: [96], forward_flops: 0}
)");
  return path.string();
}

std::string scenario(int p, const std::string& table, const std::string& algorithm,
                     const std::string& compression, int proxy_dim = 200) {
  return compression_scenario(p, fmt::format("layers: {}, proxy_dim: {}", table, proxy_dim), algorithm,
                              compression);
}

// Closed forms per piece, written from the papers' encodings.
std::uint64_t powersgd_bytes(const Piece& x, std::int64_t r) {
  if (!x.vector && (x.rows + x.cols) * r < x.rows * x.cols)
    return 4 * static_cast<std::uint64_t>((x.rows + x.cols) * r);
  return 4 * static_cast<std::uint64_t>(x.rows * x.cols);  // vectors and small matrices go dense
}
std::uint64_t topk_bytes(const Piece& x, double ratio) {
  const auto k = std::max<std::int64_t>(1, std::llround(ratio * static_cast<double>(x.rows * x.cols)));
  return 8 * static_cast<std::uint64_t>(k);  // uint32 index + fp32 value
}
template <class F>
std::uint64_t sum_pieces(F bytes) {
  std::uint64_t total = 0;
  for (const Piece& x : kPieces) total += bytes(x);
  return total;
}

std::vector<std::uint64_t> step_bytes(const std::string& yaml) {
  const std::string text = run_isolated([&] {
    const auto result = simulate(load_scenario_text(yaml, "test.yaml"), {});
    std::string out;
    for (const auto& s : summarize_steps(result.log)) out += fmt::format("{} ", s.bytes_sent);
    return out;
  });
  std::istringstream in(text);
  std::vector<std::uint64_t> bytes;
  for (std::uint64_t b; in >> b;) bytes.push_back(b);
  if (bytes.empty()) throw std::runtime_error("no steps: " + text);
  return bytes;
}

const char* const kScopes[] = {"granularity: model", "granularity: layer, bucket: 1B"};

}  // namespace

TEST_CASE("PowerSGD and top-k send their formula summed over the modeled layer pieces",
          "[compression][shapes]") {
  const std::string table = write_table();
  const int p = 2;
  for (const char* scope : kScopes) {
    INFO(scope);
    SECTION(std::string("PowerSGD rank 2 through all-gather: each rank's payload crosses p - 1 links; ") +
            scope) {
      const std::uint64_t per_rank = sum_pieces([](const Piece& x) { return powersgd_bytes(x, 2); });
      // The [256, 64] layer alone: (256 + 64) * 2 * 4 bytes of factors per rank (5120 B on 2 ranks)
      // + 256 * 4 of bias.
      CHECK(powersgd_bytes(kPieces[0], 2) + powersgd_bytes(kPieces[1], 2) == 2560 + 1024);
      for (auto b : step_bytes(
               scenario(p, table, fmt::format("name: allgather, {}", scope), "name: powersgd, rank: 2")))
        CHECK(b == std::uint64_t(p) * (p - 1) * per_rank);
    }
    SECTION(
        std::string("PowerSGD rank 3 on the ring: P (with the dense pieces) and Q, each 2(p-1) x size; ") +
        scope) {
      const std::uint64_t encoded = sum_pieces([](const Piece& x) { return powersgd_bytes(x, 3); });
      for (auto b : step_bytes(
               scenario(p, table, fmt::format("name: ring_allreduce, {}", scope), "name: powersgd, rank: 3")))
        CHECK(b == 2 * std::uint64_t(p - 1) * encoded);
    }
    SECTION(std::string("top-k keeps ratio x n of every piece; ") + scope) {
      const std::uint64_t per_rank = sum_pieces([](const Piece& x) { return topk_bytes(x, 0.013); });
      for (auto b : step_bytes(
               scenario(p, table, fmt::format("name: allgather, {}", scope), "name: topk, ratio: 0.013")))
        CHECK(b == std::uint64_t(p) * (p - 1) * per_rank);
    }
  }
}

TEST_CASE("a wire layout's bytes are each piece's encoding from the papers, summed by hand",
          "[compression][shapes]") {
  WireLayout layout;
  for (const Piece& x : kPieces) layout.pieces.push_back({{x.rows, x.cols}, x.vector});
  // kPieces: matrices 256 x 64 and 32 x 288, vectors of 256, 64 and 96: 26,016 fp32 values.
  CHECK(make_compressor("none", {})->encoded_bytes(layout) == 26016 * 4);
  CHECK(make_compressor("fp16", {})->encoded_bytes(layout) == 26016 * 2);
  // PowerSGD rank 3: (m + n) x 3 fp32 per matrix, 320 x 12 = 3,840 bytes each; vectors dense,
  // 416 x 4 = 1,664 bytes.
  CHECK(make_compressor("powersgd", {{"rank", "3"}})->encoded_bytes(layout) == 3840 + 3840 + 1664);
  // top-k at 1 %: k = round(0.01 n), at least 1, per piece: 164 + 3 + 92 + 1 + 1 = 261 (index, value)
  // pairs of 8 bytes.
  CHECK(make_compressor("topk", {{"ratio", "0.01"}})->encoded_bytes(layout) == 261 * 8);
  // ATOMO: the SVD work of a modeled 256 x 64 matrix, not of a near-square view of its elements.
  const auto atomo = make_compressor("atomo", {});
  CHECK(atomo->encode_flops(WireLayout::matrix({256, 64})) == Approx(4.0 * 256 * 64 * 64));
  CHECK(atomo->encode_flops(WireLayout{{{{256, 1}, true}}}) == 0.0);  // a vector is sent dense
  CHECK(atomo->encoded_bytes(WireLayout{{{{256, 1}, true}}}) == 256 * 4);
}

namespace {

struct BucketRun {
  std::vector<Eigen::VectorXf> in, out;  // per rank, step 0, whole proxy
};

BucketRun run_step(const std::string& yaml) {
  const std::string text = run_isolated([&] {
    const Captured run = simulate_capturing(load_scenario_text(yaml, "test.yaml"));
    std::ostringstream os;
    os.precision(9);
    for (std::size_t rank = 0; rank < run.before.at(0).size(); ++rank) {
      os << run.before.at(0)[rank].size();
      for (float x : run.before.at(0)[rank]) os << ' ' << x;
      for (float x : run.after.at(0)[rank]) os << ' ' << x;
      os << '\n';
    }
    return os.str();
  });
  std::istringstream in(text);
  BucketRun r;
  for (Eigen::Index n; in >> n;) {
    Eigen::VectorXf a(n), b(n);
    for (Eigen::Index i = 0; i < n; ++i) in >> a[i];
    for (Eigen::Index i = 0; i < n; ++i) in >> b[i];
    r.in.push_back(a);
    r.out.push_back(b);
  }
  if (r.in.empty()) throw std::runtime_error("no output: " + text);
  return r;
}

std::string equal_layers_table() {
  const auto path = fresh_dir("equal-layers") / "table.yaml";
  write_file(path,
             "name: equal\nlayers:\n  - {name: a, shape: [16, 16], forward_flops: 0}\n"
             "  - {name: b, shape: [16, 16], forward_flops: 0}\n");
  return path.string();
}

// Positions of the non-zero entries of v[begin, begin + n).
std::vector<int> support(const Eigen::VectorXf& v, int begin, int n) {
  std::vector<int> s;
  for (int i = 0; i < n; ++i)
    if (v[begin + i] != 0.0f) s.push_back(i);
  return s;
}

}  // namespace

TEST_CASE("equal-sized buckets draw different compression randomness in one step",
          "[compression][shapes][random]") {
  const std::string table = equal_layers_table();
  const int n = 256, k = 32;  // each layer is one bucket of 256 proxy values (the proxy equals the model)
  const std::string by_layer = "granularity: layer, bucket: 1B, op: avg";
  SECTION("random-k through all-gather on one rank keeps different indices in the two buckets") {
    const auto r =
        run_step(scenario(1, table, "name: allgather, " + by_layer, "name: randomk, k: 32", 2 * n));
    const auto first = support(r.out[0], 0, n), second = support(r.out[0], n, n);
    CHECK(first.size() == std::size_t(k));
    CHECK(second.size() == std::size_t(k));
    CHECK(first != second);
  }
  SECTION("shared-seed random-k: all ranks keep the same indices, the aggregate is the direct one") {
    const int p = 4;
    const auto r = run_step(scenario(p, table, "name: ring_allreduce, " + by_layer,
                                     "name: randomk, k: 32, shared_seed: true", 2 * n));
    REQUIRE(r.out.size() == std::size_t(p));
    std::vector<std::vector<int>> kept;
    for (int b = 0; b < 2; ++b) {
      const auto s = support(r.out[0], b * n, n);
      CHECK(s.size() == std::size_t(k));
      kept.push_back(s);
      for (int rank = 1; rank < p; ++rank) CHECK(support(r.out[rank], b * n, n) == s);
      // On the kept indices: (n / k) times the average of the ranks' values; zero elsewhere.
      double error = 0, scale = 0;
      for (int i : s) {
        double avg = 0;
        for (int rank = 0; rank < p; ++rank) avg += r.in[rank][b * n + i];
        avg *= static_cast<double>(n) / k / p;
        scale = std::max(scale, std::abs(avg));
        for (int rank = 0; rank < p; ++rank) error = std::max(error, std::abs(r.out[rank][b * n + i] - avg));
      }
      CHECK(error <= summation_tolerance(p, scale) * n / k);
    }
    CHECK(kept[0] != kept[1]);
  }
}

TEST_CASE("bucket contexts: QSGD and random-k draw differently per bucket, shared streams agree across ranks",
          "[compression][shapes][random]") {
  RankContext rank0, rank1;
  rank0.seed = rank1.seed = 17;
  rank0.step = rank1.step = 3;
  rank1.rank = 1;
  const Eigen::VectorXf v = normal_vector(4096, 5);
  const TensorDesc t = TensorDesc::flat(v.size(), static_cast<std::uint64_t>(v.size()));
  const auto qsgd = make_compressor("qsgd", {});
  Rng a = rank0.for_bucket(0).rng(Stream::compression), b = rank0.for_bucket(1).rng(Stream::compression);
  CHECK(qsgd->compress(v, t, a).codes != qsgd->compress(v, t, b).codes);
  const auto shared = make_compressor("randomk", {{"k", "64"}, {"shared_seed", "true"}});
  Rng s0 = rank0.for_bucket(1).shared_rng(Stream::compression),
      s1 = rank1.for_bucket(1).shared_rng(Stream::compression);
  CHECK(shared->compress(v, t, s0).seed == shared->compress(v, t, s1).seed);  // the seed of the indices
  Rng other = rank0.for_bucket(2).shared_rng(Stream::compression);
  Rng again = rank0.for_bucket(1).shared_rng(Stream::compression);
  CHECK(shared->compress(v, t, other).seed != shared->compress(v, t, again).seed);
}

TEST_CASE("a layered, bucketed, compressed scenario reruns byte-identically",
          "[compression][shapes][determinism]") {
  const auto dir = fresh_dir("layer-shapes-rerun");
  write_file(dir / "s.yaml", scenario(3, write_table(), "name: allgather, granularity: layer, bucket: 1B",
                                      "name: randomk, ratio: 0.1"));
  REQUIRE(run_aggsim({"run", "s.yaml", "--out", "a"}, dir).exit_code == 0);
  REQUIRE(run_aggsim({"run", "s.yaml", "--out", "b"}, dir).exit_code == 0);
  for (const char* f : {"summary.json", "steps.csv"}) {
    INFO(f);
    CHECK(!read_file(dir / "a" / f).empty());
    CHECK(read_file(dir / "a" / f) == read_file(dir / "b" / f));
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("a wire layout sliced for a shard keeps whole pieces and whole matrix rows",
          "[compression][shapes]") {
  WireLayout layout;
  for (const Piece& x : kPieces) layout.pieces.push_back({{x.rows, x.cols}, x.vector});
  const auto pieces_of = [](const WireLayout& l) {
    std::vector<std::tuple<std::int64_t, std::int64_t, bool>> out;
    for (const WirePiece& p : l.pieces) out.emplace_back(p.shape.rows, p.shape.cols, p.vector);
    return out;
  };
  using P = std::vector<std::tuple<std::int64_t, std::int64_t, bool>>;
  // 26,016 elements: [256 x 64] = 16,384, bias 256, [32 x 288] = 9,216, 64, 96. Halves of 13,008:
  // 203 whole rows of 64 (12,992) and 16 elements of row 203; then the other 48 of that row,
  // rows 204-255, and every later piece whole.
  CHECK(pieces_of(layout.slice(0, 13008)) == P{{203, 64, false}, {16, 1, false}});
  CHECK(pieces_of(layout.slice(13008, 13008)) ==
        P{{48, 1, false}, {52, 64, false}, {256, 1, true}, {32, 288, false}, {64, 1, true}, {96, 1, true}});
  CHECK(pieces_of(layout.slice(16384, 300)) == P{{256, 1, true}, {44, 1, false}});  // bias, 44 of row 0
  CHECK(pieces_of(layout.slice(0, 26016)) == pieces_of(layout));
  CHECK(pieces_of(layout.slice(70, 10)) == P{{10, 1, false}});  // inside one row
}

TEST_CASE("the parameter server's shards carry the modeled pieces they cut out",
          "[compression][shapes][ps]") {
  const std::string table = write_table();
  // PowerSGD rank 2; a flat run (a cut-off part of a row) is encoded on its near-square view.
  const auto bytes = [](const std::vector<Piece>& pieces) {
    std::uint64_t total = 0;
    for (const Piece& x : pieces) {
      if (x.vector || x.cols > 1)
        total += powersgd_bytes(x, 2);
      else {
        const Shape view = matrix_view(Shape{x.rows, 1});
        total += powersgd_bytes({view.rows, view.cols, false}, 2);
      }
    }
    return total;
  };
  SECTION("one server, 2 ranks colocated: rank 1 pushes the whole layout encoded, pulls it dense") {
    for (auto b :
         step_bytes(scenario(2, table, "name: parameter_server, servers: 1", "name: powersgd, rank: 2")))
      CHECK(b == bytes(kPieces) + 26016 * 4);
  }
  SECTION("two servers, 3 ranks colocated: each shard's pieces, pushed by the two other ranks") {
    const std::uint64_t first = bytes({{203, 64, false}, {16, 1, false}});
    const std::uint64_t second = bytes(
        {{48, 1, false}, {52, 64, false}, {256, 1, true}, {32, 288, false}, {64, 1, true}, {96, 1, true}});
    // Pushes: ranks 1 and 2 to server 0, ranks 0 and 2 to server 1; pulls: each server's dense
    // shard to the two other ranks.
    for (auto b :
         step_bytes(scenario(3, table, "name: parameter_server, servers: 2", "name: powersgd, rank: 2")))
      CHECK(b == 2 * first + 2 * second + 4 * 13008 * 4);
  }
}
