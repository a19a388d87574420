// The sweep files shipped in scenarios/sweeps/ expand to their documented point counts, or, while
// a component they name is not built in, fail clearly naming it and the sweep point.
#include <catch2/catch.hpp>

#include "sim/core/error.hpp"
#include "sim/sweep/sweep.hpp"
#include "sweep_support.hpp"

using namespace aggsim;
namespace fs = std::filesystem;

TEST_CASE("shipped sweep files expand, or name the missing component", "[sweep]") {
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
    try {
      const Sweep sweep = expand_sweep(e.path().string());
      CHECK(sweep.points.size() == points.at(name));
      CHECK(sweep.name == name);
    } catch (const InputError& error) {
      CHECK(name != "ring_sizes");  // needs nothing beyond the ring all-reduce
      const std::string message = error.what();
      const bool names_it = message.find("unknown algorithm '") != std::string::npos ||
                            message.find("unknown compressor '") != std::string::npos ||
                            message.find("unknown topology '") != std::string::npos;
      INFO(message);
      CHECK(names_it);
      CHECK_THAT(message, Catch::Contains("in sweep point"));
    }
  }
  CHECK(seen == points.size());
}
