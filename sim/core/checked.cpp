#include "sim/core/checked.hpp"

#include <atomic>
#include <cstdio>

namespace aggsim {

namespace {
std::atomic<bool> saturated{false};
}

void warn_counter_saturated() {
  if (saturated.exchange(true)) return;
  std::fprintf(
      stderr,
      "aggsim: warning: a byte or message counter reached 2^64 - 1 (18446744073709551615) and stopped "
      "there; bytes_sent and messages totals are lower bounds\n");
}

}  // namespace aggsim
