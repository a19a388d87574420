// libFuzzer target: the measurement readers (nccl-tests, OSU, CSV) on arbitrary bytes, with and
// without --ranks/--nodes. Whatever the input, they must return or throw InputError; any other
// exception (std::out_of_range from a conversion), crash, stack overflow, hang or sanitizer report
// is a bug. Run with tests/fuzz/run.sh (see tests/fuzz/README.md).
#include <cstddef>
#include <cstdint>
#include <string>

#include "sim/calibrate/measurement.hpp"
#include "sim/core/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  aggsim::MeasurementDefaults eight_on_two;  // --ranks 8 --nodes 2
  eight_on_two.ranks = 8;
  eight_on_two.nodes = 2;
  for (const aggsim::MeasurementDefaults& defaults : {aggsim::MeasurementDefaults{}, eight_on_two}) {
    try {
      // The label names no collective: the reader must find it in the text or refuse the file.
      aggsim::parse_measurements(text, "fuzz.log", defaults);
    } catch (const aggsim::InputError&) {
    }
  }
  return 0;
}
