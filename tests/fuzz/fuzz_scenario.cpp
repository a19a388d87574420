// libFuzzer target: the scenario loader (YAML parsing, every key check, the algorithm and
// compressor checks, resolved.yaml) on arbitrary bytes. Whatever the input, loading must give a
// scenario or throw InputError; any other exception, crash or sanitizer report is a bug. Files the
// scenario names (platforms, layer tables) are looked up relative to the working directory, so
// run it from the source tree to reach the shipped ones (tests/fuzz/run.sh does).
#include <cstddef>
#include <cstdint>
#include <string>

#include "sim/core/error.hpp"
#include "sim/scenario/scenario_loader.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const aggsim::Scenario sc = aggsim::load_scenario_text(text, "fuzz.yaml");
    // What `run` writes first: the resolved scenario must load again.
    aggsim::load_scenario_text(aggsim::resolved_yaml(sc), "resolved.yaml");
  } catch (const aggsim::InputError&) {
  }
  return 0;
}
