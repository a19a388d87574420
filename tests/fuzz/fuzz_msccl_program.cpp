// libFuzzer target: the MSCCL program reader, its checks and its schedule on arbitrary bytes.
// Whatever the input, they must return or throw InputError; any other exception, crash, hang or
// sanitizer report is a bug. Run with tests/fuzz/run.sh (see tests/fuzz/README.md).
#include <cstddef>
#include <cstdint>
#include <string>

#include "algorithms/msccl/program.hpp"
#include "algorithms/msccl/schedule.hpp"
#include "sim/core/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const aggsim::MscclProgram program = aggsim::read_msccl_program_text(text, "fuzz.xml");
    (void)aggsim::verify_msccl_program(program);
  } catch (const aggsim::InputError&) {
  }
  return 0;
}
