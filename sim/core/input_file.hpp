#pragma once
// Reading an input file (scenario, platform, layer table, sweep) so that whatever the path names,
// the answer is its text or an InputError naming the path: a device (/dev/zero), a FIFO or a
// folder is refused before any read, a file above kMaxInputBytes is refused by its size, a path
// the system cannot resolve (symlink loop, over-long name, no permission) says why, and text that
// is not UTF-8 is refused with the line and column of the first bad byte.
#include <cstdint>
#include <string>

namespace aggsim {

// Bound on any input file: far above every shipped scenario or platform (the largest is 15 kB).
constexpr std::uintmax_t kMaxInputBytes = 64ull << 20;  // 64 MiB

// The file's text. `what` names the kind of file in messages ("scenario", "platform", ...).
std::string read_input_file(const std::string& path, const std::string& what);

// Throws InputError("label:line:col: not valid UTF-8 ...") at the first malformed sequence.
void check_utf8(const std::string& text, const std::string& label);

// Whether `path` names an existing file, as std::filesystem::exists but without throwing: a path
// the system cannot resolve at all (symlink loop, over-long name) is an InputError naming it.
bool input_path_exists(const std::string& path, const std::string& what);

}  // namespace aggsim
