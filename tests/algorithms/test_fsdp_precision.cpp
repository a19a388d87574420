// fsdp's mixed precision in the math of its message-level ring: reduce-scatters in bf16 or fp16 round
// every partial sum as NCCL's kernels do (checked against a bit-level rounding written here, and
// against fsdp over NCCL where the two rings add in the same order), and gathers in a 16-bit
// param_dtype hand out that type's values while each rank keeps its own shard in fp32.
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "fsdp_fixture.hpp"
#include "support/simulate_capturing.hpp"

using namespace aggsim;
using namespace aggsim::test;
using namespace aggsim::test::fsdp;

namespace {

// bf16 by its definition: the float's upper 16 bits, rounded to nearest, ties to even (finite values).
float bf16(float x) {
  std::uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  u += 0x7fffu + ((u >> 16) & 1u);
  u &= 0xffff0000u;
  float out;
  std::memcpy(&out, &u, sizeof out);
  return out;
}

// Each rank's synthetic gradient before and its result after the step's reduce-scatter (step 0),
// flattened rank after rank: "B r v..." and "A r v...".
struct Reduced {
  std::vector<std::vector<float>> before, after;
};

Reduced reduce_once(const std::string& yaml) {
  const std::string text = run_isolated([&] {
    const Captured c = simulate_capturing(load_scenario_text(yaml, "test.yaml"));
    std::ostringstream out;
    out.precision(9);
    for (const auto& [tag, by_step] : {std::pair{'B', &c.before}, std::pair{'A', &c.after}})
      for (const Eigen::VectorXf& v : by_step->at(0)) {
        out << tag << " " << v.size();
        for (float x : v) out << " " << x;
        out << "\n";
      }
    return out.str();
  });
  Reduced r;
  std::istringstream in(text);
  for (char tag; in >> tag;) {
    std::size_t n;
    in >> n;
    std::vector<float> v(n);
    for (float& x : v) in >> x;
    (tag == 'B' ? r.before : r.after).push_back(std::move(v));
  }
  return r;
}

}  // namespace

TEST_CASE("fsdp's ring reduce-scatters bf16 gradients rounding every partial sum, nearest even",
          "[fsdp][precision][math]") {
  // One unit of 96 values on 4 ranks: member i owns chunk (i + 1) % 4, which the ring adds up from
  // member i + 1 round to i. In bf16 every input is rounded, then every partial sum; avg divides the
  // result by 4 (exact) and rounds it again.
  const int p = 4;
  const Reduced r =
      reduce_once(scenario(p, 1, "name: fsdp, reduce_dtype: bf16", "model: {size: 1MB, proxy_dim: 96}"));
  REQUIRE(r.before.size() == static_cast<std::size_t>(p));
  REQUIRE(r.after.size() == static_cast<std::size_t>(p));
  const std::size_t n = r.before[0].size(), chunk = n / p;
  REQUIRE(n == 96);
  int rounded_differently = 0;  // elements where fp32 sums would give another value
  for (int member = 0; member < p; ++member) {
    const int c = (member + 1) % p;
    for (std::size_t i = c * chunk; i < (c + 1) * chunk; ++i) {
      float acc = bf16(r.before[static_cast<std::size_t>(c)][i]);
      double exact = r.before[static_cast<std::size_t>(c)][i];
      for (int j = 1; j < p; ++j) {
        acc = bf16(acc + bf16(r.before[static_cast<std::size_t>((c + j) % p)][i]));
        exact += r.before[static_cast<std::size_t>((c + j) % p)][i];
      }
      INFO("member " << member << ", element " << i);
      CHECK(r.after[static_cast<std::size_t>(member)][i] == bf16(acc / p));
      rounded_differently += bf16(acc / p) != static_cast<float>(exact / p);
    }
    // The chunks the member does not own are zero.
    for (std::size_t i = 0; i < n; ++i)
      if (i < c * chunk || i >= (c + 1) * chunk) CHECK(r.after[static_cast<std::size_t>(member)][i] == 0.0f);
  }
  CHECK(rounded_differently > 0);
}

TEST_CASE("fsdp's ring in bf16 and fp16 gives the bits of fsdp over NCCL where both add in one order",
          "[fsdp][precision][nccl][math]") {
  // Two members add each element once (a + b = b + a), whichever ring starts it: full sharding on 2
  // ranks, and hybrid on 4 in groups of 2 (the shards' sum across the 2 groups too). NCCL pre-scales
  // avg's inputs by 1/4 in the 16-bit type where the ring divides the rounded sum: equal bits in
  // bf16, whose range has no subnormal in reach; fp16's subnormals would round apart, so op: sum.
  struct Case {
    std::string dtype, op;
    int ranks;
    std::string sharding;
  };
  for (const Case& k : {Case{"bf16", "avg", 2, "full"}, Case{"bf16", "avg", 4, "hybrid, shard_group: 2"},
                        Case{"fp16", "sum", 2, "full"}, Case{"fp16", "sum", 4, "hybrid, shard_group: 2"}}) {
    INFO(k.dtype << " " << k.op << " on " << k.ranks << " ranks, sharding " << k.sharding);
    const std::string keys = fmt::format("name: fsdp, op: {}, sharding: {}", k.op, k.sharding);
    const Trained ring = train(mlp_scenario(k.ranks, keys + ", reduce_dtype: " + k.dtype));
    const Trained nccl = train(mlp_scenario(k.ranks, keys + ", collectives: nccl, reduce_dtype: " + k.dtype));
    const Trained fp32 = train(mlp_scenario(k.ranks, keys));
    REQUIRE(ring.weights.size() == 4);
    CHECK(ring.weights == nccl.weights);
    CHECK(ring.losses == nccl.losses);
    CHECK(ring.weights != fp32.weights);  // the rounding is really there
  }
}

TEST_CASE("fsdp's ring gathers bf16 parameters while each rank keeps its own shard in fp32",
          "[fsdp][precision][math]") {
  // After each step every element has one owner holding its fp32 master value v; every other rank
  // holds bf16(v). Counted: elements whose master is not a bf16 value (so the owner's copy differs
  // from the others'), which fp32 gathers would never show.
  const Trained t = train(mlp_scenario(4, "name: fsdp, param_dtype: bf16"));
  REQUIRE(t.weights.size() == 4);
  long masters_apart = 0, elements = 0;
  for (const auto& [step, ranks] : t.weights) {
    REQUIRE(ranks.size() == 4);
    for (std::size_t i = 0; i < ranks[0].size(); ++i) {
      ++elements;
      int full_precision = 0;
      float master = ranks[0][i];
      for (const auto& w : ranks)
        if (bf16(w[i]) != w[i]) {
          ++full_precision;
          master = w[i];
        }
      INFO("step " << step << ", element " << i);
      CHECK(full_precision <= 1);
      for (const auto& w : ranks) CHECK((w[i] == master || w[i] == bf16(master)));
      masters_apart += full_precision == 1;
    }
  }
  CHECK(masters_apart > elements / 2);
}
