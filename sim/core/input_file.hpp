#pragma once
// Reading an input file (scenario, platform, layer table, sweep) so that whatever the path names,
// the answer is its text or an InputError naming the path: a device (/dev/zero), a FIFO or a
// folder is refused before any read, a file above kMaxInputBytes is refused by its size, a path
// the system cannot resolve (symlink loop, over-long name, no permission) says why, a path holding a
// NUL byte (possible in a YAML string, where the system would read the path only up to it) is
// refused, a line above kMaxInputLineBytes is refused with its number, and text that is not UTF-8
// is refused with the line and column of the first bad byte. No message shows the file's content.
#include <cstddef>
#include <cstdint>
#include <string>

namespace aggsim {

// Bound on any input file: far above every shipped scenario or platform (the largest is 15 kB).
constexpr std::uintmax_t kMaxInputBytes = 64ull << 20;  // 64 MiB

// Bound on one line of any input file: far above any real line (a platform XML written on one line
// for thousands of hosts, a log line with a long launcher prefix), far below what a reader must
// never hold or scan at once.
constexpr std::size_t kMaxInputLineBytes = std::size_t{1} << 20;  // 1 MiB

// The file's text. `what` names the kind of file in messages ("scenario", "platform", ...).
// `utf8`: the text must be UTF-8 (every file aggsim parses as YAML or XML; benchmark logs need not).
std::string read_input_file(const std::string& path, const std::string& what, bool utf8 = true);

// Throws InputError("label:line: the line is longer than ...") at the first line above
// kMaxInputLineBytes.
void check_line_lengths(const std::string& text, const std::string& label);

// Throws InputError naming the path when it holds a NUL byte.
void check_path_bytes(const std::string& path, const std::string& what);

// Throws InputError("label:line:col: not valid UTF-8 ...") at the first malformed sequence.
void check_utf8(const std::string& text, const std::string& label);

// Whether `path` names an existing file, as std::filesystem::exists but without throwing: a path
// the system cannot resolve at all (symlink loop, over-long name) is an InputError naming it.
bool input_path_exists(const std::string& path, const std::string& what);

}  // namespace aggsim
