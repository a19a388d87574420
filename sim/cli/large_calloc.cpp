// calloc for the aggsim executable when mimalloc serves malloc (CMakeLists.txt links this file only
// then). mimalloc 2.0 writes zeros over every byte of a calloc'ed block, so each page of a large
// block becomes resident at once. SimGrid allocates an actor's stack with calloc when it runs without
// guard pages (runs of 8,192 ranks and more, sim/engine/simulation.cpp): 8 MiB written per actor,
// 64 GB at 8,192 ranks with two actors each, where the C library's malloc maps untouched zero pages.
// Here a large block's whole pages are handed back to the kernel instead (MADV_DONTNEED on private
// memory: they read as zero and cost nothing until touched); only the partial page at its end is
// written. The contents are the same zeros either way.
#include <mimalloc.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

namespace {

// Below this, writing the zeros costs less than the system call.
constexpr std::size_t kReleasePagesFrom = std::size_t{1} << 20;

std::uintptr_t page_size() {
  static const auto size = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
  return size;
}

}  // namespace

extern "C" void* calloc(std::size_t count, std::size_t size) {
  std::size_t bytes = 0;
  if (__builtin_mul_overflow(count, size, &bytes)) {
    errno = ENOMEM;
    return nullptr;
  }
  if (bytes < kReleasePagesFrom) return mi_calloc(count, size);
  // Page-aligned: only the tail is written, and mimalloc 2.0 serves a run of aligned 8 MiB blocks
  // (an actor's stack) an order of magnitude faster than unaligned ones.
  const std::uintptr_t page = page_size();
  auto* block = static_cast<unsigned char*>(mi_malloc_aligned(bytes, page));
  if (block == nullptr) return nullptr;
  // The block starts on a page: its whole pages, then the part of a page after them.
  const std::size_t whole = bytes & ~(page - 1);
  std::memset(block + whole, 0, bytes - whole);
  // A block reused from earlier allocations holds old data: released pages come back as zeros. If
  // the kernel refuses (memory that is not private and anonymous), zeros are written instead.
  if (madvise(block, whole, MADV_DONTNEED) != 0) std::memset(block, 0, whole);
  return block;
}
