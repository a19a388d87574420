// libFuzzer target: the platform checker on arbitrary bytes. Whatever the input, the checker must
// return or throw InputError; any other exception, crash or sanitizer report is a bug. Run with
// tests/fuzz/run.sh (see tests/fuzz/README.md).
#include <cstddef>
#include <cstdint>
#include <string>

#include "sim/core/error.hpp"
#include "sim/core/input_file.hpp"
#include "sim/platform/xml_check.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  for (const bool ns3 : {false, true}) {
    try {
      aggsim::check_utf8(text, "fuzz.xml");  // what read_input_file does before the checker
      aggsim::check_platform_xml_text(text, "fuzz.xml", ns3);
    } catch (const aggsim::InputError&) {
    }
  }
  return 0;
}
