// Units (SimGrid's suffixes), typed parameters, natural host order.
#include <catch2/catch.hpp>
#include <cmath>

#include "sim/core/params.hpp"
#include "sim/core/random.hpp"
#include "sim/core/strings.hpp"
#include "sim/core/units.hpp"
#include "sim/platform/platform.hpp"

using namespace aggsim;

TEST_CASE("sizes: decimal and binary prefixes, bare numbers are bytes", "[units]") {
  CHECK(units::parse_bytes("100MB") == 100000000ULL);
  CHECK(units::parse_bytes("64MiB") == 67108864ULL);
  CHECK(units::parse_bytes("4096") == 4096ULL);
  CHECK(units::parse_bytes("4096B") == 4096ULL);
  CHECK(units::parse_bytes("1.5kB") == 1500ULL);
  CHECK(units::parse_bytes("2GiB") == 2147483648ULL);
  CHECK_THROWS_WITH(units::parse_bytes("10XB"), Catch::Contains("unknown size unit 'XB'"));
  CHECK_THROWS_WITH(units::parse_bytes("-1MB"), Catch::Contains("non-negative"));
  CHECK_THROWS_WITH(units::parse_bytes("1.5B"), Catch::Contains("whole number"));
  CHECK_THROWS(units::parse_bytes("lots"));
}

TEST_CASE("bandwidths: bps are bits, Bps bytes, durations and speeds", "[units]") {
  CHECK(units::parse_bandwidth("10Gbps") == 1.25e9);
  CHECK(units::parse_bandwidth("25GBps") == 25e9);
  CHECK(units::parse_bandwidth("1GiBps") == 1073741824.0);
  CHECK(units::parse_duration("1us") == 1e-6);
  CHECK(units::parse_duration("2ms") == 2e-3);
  CHECK(units::parse_duration("3") == 3.0);
  CHECK(units::parse_speed("100Gf") == 1e11);
  CHECK_THROWS_WITH(units::parse_bandwidth("10Gbit"), Catch::Contains("unknown bandwidth unit 'Gbit'"));
  CHECK_THROWS_WITH(units::parse_duration("1 fortnight"), Catch::Contains("unknown duration unit"));
}

TEST_CASE("typed parameters check kinds and ranges and print back canonically", "[params]") {
  const auto n = ParamSpec("n", ParamKind::integer).between(1, 10);
  CHECK(std::get<std::int64_t>(parse_param(n, "7")) == 7);
  CHECK_THROWS_WITH(parse_param(n, "11"), Catch::Contains("in [1, 10]"));
  CHECK_THROWS_WITH(parse_param(n, "2.5"), Catch::Contains("must be an integer"));
  const auto mode = ParamSpec("mode", ParamKind::text).one_of({"a", "b"});
  CHECK_THROWS_WITH(parse_param(mode, "c"), Catch::Contains("must be one of a | b"));
  const auto bw = ParamSpec("bw", ParamKind::bandwidth);
  const ParamValue v = parse_param(bw, "10Gbps");
  CHECK(std::get<double>(parse_param(bw, format_param(bw, v))) == 1.25e9);
  const auto dims = ParamSpec("dims", ParamKind::integer_list).at_least(1);
  CHECK(std::get<std::vector<std::int64_t>>(parse_param(dims, "4, 4,2")) ==
        std::vector<std::int64_t>{4, 4, 2});
  CHECK_THROWS(parse_param(dims, "4,0"));
  const Params defaults =
      default_params({ParamSpec("k", ParamKind::integer, "3"), ParamSpec("opt", ParamKind::real)});
  CHECK(defaults.integer("k") == 3);
  CHECK_FALSE(defaults.has("opt"));
}

TEST_CASE("hosts sort in natural order, not as text", "[platform]") {
  CHECK(natural_less("host-2", "host-10"));
  CHECK_FALSE(natural_less("host-10", "host-2"));
  CHECK(natural_less("node-2-gpu-7", "node-10-gpu-0"));
  CHECK(natural_less("node-2-gpu-1", "node-2-gpu-10"));
  CHECK(natural_less("a", "b"));
  CHECK_FALSE(natural_less("host-3", "host-3"));
}

TEST_CASE("comma lists split into trimmed items, empty items kept", "[strings]") {
  CHECK(split_list("a, b,c") == std::vector<std::string>{"a", "b", "c"});
  CHECK(split_list(" gpu-7 ,\tgpu-3\t") == std::vector<std::string>{"gpu-7", "gpu-3"});
  CHECK(split_list("a,,b") == std::vector<std::string>{"a", "", "b"});
  CHECK(split_list("a,") == std::vector<std::string>{"a", ""});
  CHECK(split_list("") == std::vector<std::string>{""});
  CHECK(split_list("x;y", ';') == std::vector<std::string>{"x", "y"});
}

TEST_CASE("random streams are reproducible and independent by purpose and rank", "[random]") {
  Rng a = make_rng(7, Stream::gradient, 1, 2), b = make_rng(7, Stream::gradient, 1, 2);
  Rng c = make_rng(7, Stream::gradient, 2, 2), d = make_rng(7, Stream::compression, 1, 2);
  const auto x = a();
  CHECK(x == b());
  CHECK(x != c());
  CHECK(x != d());
  // Standard normal: mean ~0 and variance ~1 over many draws (5 standard errors).
  Rng r = make_rng(1, Stream::workload);
  const int n = 200000;
  double sum = 0, sum2 = 0;
  for (int i = 0; i < n; ++i) {
    const double z = standard_normal(r);
    sum += z;
    sum2 += z * z;
  }
  CHECK(std::abs(sum / n) < 5.0 / std::sqrt(n));
  CHECK(std::abs(sum2 / n - 1.0) < 5.0 * std::sqrt(2.0 / n));
}
