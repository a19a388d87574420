// libFuzzer target: the readers of NCCL's INFO lines (the per-call tuning line, the channel counts of
// the init lines) and the split of a table row's piece from an NCCL line glued to it, line by line
// on arbitrary bytes. They must return for every input, never throw, and what they return must hold
// (channels within NCCL's bounds, a reason for every unreadable tuning line); anything else traps.
// Run with tests/fuzz/run.sh (see tests/fuzz/README.md).
#include <cstddef>
#include <cstdint>
#include <string>

#include "algorithms/nccl/calibration/nccl_info_lines.hpp"
#include "sim/calibrate/readers.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  aggsim::readers::KnownHosts hosts;
  for (const std::string& line : aggsim::readers::log_lines(text)) {
    hosts.add(aggsim::readers::debug_host(line));
    const auto split = aggsim::readers::split_glued_debug(line, hosts);
    if (split.text.size() + split.debug.size() > line.size()) __builtin_trap();
    const auto message = aggsim::nccl_info_message(split.debug.empty() ? line : split.debug);
    if (!message) continue;
    const aggsim::TuningParse tuning = aggsim::parse_tuning_message(*message);
    if (tuning.line && (!tuning.is_tuning || tuning.line->choice.channels < 0 ||
                        tuning.line->choice.channels > 1024 || tuning.line->choice.nccl_algorithm.empty()))
      __builtin_trap();
    if (tuning.is_tuning && !tuning.line && tuning.why.empty()) __builtin_trap();
    if (const auto channels = aggsim::parse_channel_message(*message))
      if (channels->coll < 0 || channels->coll > 1024 || channels->nvls > 1024 ||
          channels->ring_index >= 1024)
        __builtin_trap();
  }
  return 0;
}
