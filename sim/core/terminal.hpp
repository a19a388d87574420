#pragma once
// What aggsim prints on a terminal besides errors (start lines, summaries, a sweep's progress)
// shows names and paths from input files: each line is made printable (sim/core/error.hpp), so a
// scenario someone sends cannot drive the terminal with an escape sequence in its name.
#include <fmt/format.h>

#include <cstdio>
#include <utility>

#include "sim/core/error.hpp"

namespace aggsim {

template <class... Args>
void print_lines(std::FILE* out, fmt::format_string<Args...> format, Args&&... args) {
  std::fputs(printable_lines(fmt::format(format, std::forward<Args>(args)...)).c_str(), out);
}

}  // namespace aggsim
