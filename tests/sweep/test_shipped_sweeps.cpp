// The sweep files shipped in scenarios/sweeps/ expand to their documented point counts.
#include <catch2/catch.hpp>

#include "sim/sweep/sweep.hpp"
#include "sweep_support.hpp"

using namespace aggsim;
namespace fs = std::filesystem;

TEST_CASE("shipped sweep files expand to their documented point counts", "[sweep]") {
  const std::map<std::string, std::size_t> points = {
      {"ring_sizes", 5 * 3}, {"allreduce_scaling", 3 * 4}, {"compression_bandwidth", 5 * 4}};
  const fs::path dir = fs::path(AGGSIM_SOURCE_DIR) / "scenarios/sweeps";
  std::size_t seen = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() != ".yaml") continue;
    const std::string name = e.path().stem().string();
    INFO(name);
    REQUIRE(points.count(name) == 1);  // every shipped sweep is listed here with its size
    ++seen;
    const Sweep sweep = expand_sweep(e.path().string());
    CHECK(sweep.points.size() == points.at(name));
    CHECK(sweep.name == name);
  }
  CHECK(seen == points.size());
}
