// libFuzzer target: the sweep reader on arbitrary bytes. Its header (axes, the point count with
// overflow checks, the refusal above kMaxSweepPoints) must give a sweep or throw InputError whatever
// the axes' sizes; a sweep of a few points is then expanded too (each point loaded and checked).
// Larger sweeps stop at the header: expanding thousands of points is bounded work, but not a
// fuzzer's ten seconds an input.
#include <cstddef>
#include <cstdint>
#include <string>

#include "sim/core/error.hpp"
#include "sim/sweep/sweep.hpp"

namespace {
constexpr std::uint64_t kPointsExpanded = 16;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const aggsim::Sweep header = aggsim::read_sweep_header_text(text, "fuzz.yaml");
    if (header.planned_points > aggsim::kMaxSweepPoints) __builtin_trap();  // the header must refuse it
    if (header.planned_points <= kPointsExpanded) {
      const aggsim::Sweep sweep = aggsim::expand_sweep_text(text, "fuzz.yaml");
      if (sweep.points.size() != header.planned_points) __builtin_trap();
    }
  } catch (const aggsim::InputError&) {
  }
  return 0;
}
