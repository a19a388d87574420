// sim/cli/large_calloc.cpp against what calloc must do: every byte of the block reads zero, also when
// the block reuses memory that held data, at any size and page offset; and a large block's whole
// pages are not resident until written (what mimalloc's own calloc gives up). Exit 0 when all hold.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

namespace {

long resident_kib() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("VmRSS:", 0) == 0) return std::strtol(line.c_str() + 6, nullptr, 10);
  return -1;
}

bool all_zero(const unsigned char* p, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i)
    if (p[i] != 0) return false;
  return true;
}

int failures = 0;
void check(bool ok, const std::string& what) {
  if (!ok) {
    std::printf("FAILED: %s\n", what.c_str());
    ++failures;
  }
}

}  // namespace

int main() {
  // Sizes below, at and above the 1 MiB threshold, whole pages and not.
  for (const std::size_t bytes : {std::size_t{1000}, std::size_t{1} << 20, (std::size_t{3} << 20) + 123,
                                  std::size_t{8} << 20}) {
    for (int round = 0; round < 3; ++round) {
      auto* p = static_cast<unsigned char*>(std::calloc(1, bytes));
      check(p != nullptr, "calloc of " + std::to_string(bytes) + " bytes");
      if (p == nullptr) continue;
      check(all_zero(p, bytes), std::to_string(bytes) + " bytes, round " + std::to_string(round) + ": not all zero");
      std::memset(p, 0xab, bytes);  // the next round may get this memory back
      std::free(p);
    }
  }
  // calloc(count, size) whose product overflows fails instead of returning a short block.
  // (volatile: the compiler would otherwise see the overflow and warn about the call it is testing)
  volatile std::size_t huge = std::size_t{1} << 40;
  check(std::calloc(huge, huge) == nullptr, "overflowing count x size refused");

  // 64 blocks of 8 MiB (an actor's stack each): mimalloc's calloc makes 512 MiB resident.
  const long before = resident_kib();
  std::vector<void*> blocks;
  for (int i = 0; i < 64; ++i) blocks.push_back(std::calloc(1, std::size_t{8} << 20));
  const long grown = resident_kib() - before;
  std::printf("64 calloc'ed blocks of 8 MiB: resident memory grew by %ld KiB\n", grown);
  check(grown < 32 * 1024, "64 x 8 MiB calloc'ed blocks stay below 32 MiB resident");
  for (void* b : blocks) std::free(b);
  return failures == 0 ? 0 : 1;
}
