// `aggsim bench`: every program it times simulates the same ring, which the α-β closed form gives.
#include <catch2/catch.hpp>
#include <map>
#include <sstream>

#include "support/cli.hpp"

using namespace aggsim::test;

namespace {

struct BenchRow {
  long messages = 0;
  double sim_time_s = 0;
};

// The table's rows by program name; a name may hold spaces, the seven figures after it do not.
std::map<std::string, BenchRow> bench_rows(const std::string& out) {
  std::map<std::string, BenchRow> rows;
  std::istringstream lines(out);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream words(line);
    std::vector<std::string> w;
    for (std::string x; words >> x;) w.push_back(x);
    if (w.size() < 8 || w.back().empty() || w.back().back() != 'x') continue;
    std::string name;
    for (std::size_t i = 0; i + 7 < w.size(); ++i) name += (name.empty() ? "" : " ") + w[i];
    rows[name] = BenchRow{std::stol(w[w.size() - 4]), std::stod(w[w.size() - 2])};
  }
  return rows;
}

}  // namespace

TEST_CASE("aggsim bench: bare SimGrid and aggsim run the same ring, the α-β closed form's", "[cli][bench]") {
  const int p = 8;
  const auto r =
      run_aggsim({"bench", "--ranks", std::to_string(p), "--size", "1MiB", "--network", "alpha_beta"});
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  const auto rows = bench_rows(r.out);
  std::vector<std::string> expected = {"bare SimGrid", "aggsim (math off)", "aggsim (math on)"};
  // The bare program on aggsim's allocator runs too when the build uses mimalloc.
  if (run_aggsim({"--version"}).out.find("allocator: mimalloc") != std::string::npos)
    expected.push_back("bare, mimalloc");
  CHECK(rows.size() == expected.size());
  // Bench platform: one 10 Gb/s, 1 us link up and one down per host, so α = 2 us and β = 1.25e9 B/s;
  // 2^20 bytes of fp32 split in 8 chunks of 2^17 bytes; 2(p-1) steps.
  const double alpha = 2e-6, beta = 1.25e9, chunk = 131072;
  const double closed_form = 2 * (p - 1) * (alpha + chunk / beta);
  for (const auto& name : expected) {
    INFO(name);
    REQUIRE(rows.count(name) == 1);
    CHECK(rows.at(name).messages == 2L * p * (p - 1));
    CHECK(rows.at(name).sim_time_s == Approx(closed_form).margin(5e-7));  // printed to the microsecond
  }
}
