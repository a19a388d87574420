#pragma once
// Reads what `aggsim list` prints: a section is the lines after its heading up to the next blank
// line; an entry is a line indented by two spaces whose first word is its name.
#include <sstream>
#include <string>
#include <vector>

namespace aggsim::test {

// The lines of `out` after the first one that starts with `heading`, up to the next blank line.
inline std::vector<std::string> list_section(const std::string& out, const std::string& heading) {
  std::vector<std::string> lines;
  std::istringstream in(out);
  bool inside = false;
  for (std::string line; std::getline(in, line);) {
    if (!inside) {
      inside = line.rfind(heading, 0) == 0;
      continue;
    }
    if (line.empty()) break;
    lines.push_back(line);
  }
  return lines;
}

inline std::string first_word(const std::string& line) {
  std::istringstream in(line);
  std::string word;
  in >> word;
  return word;
}

// The entry names among a section's lines (its parameters are indented further).
inline std::vector<std::string> list_entry_names(const std::vector<std::string>& lines) {
  std::vector<std::string> names;
  for (const auto& line : lines)
    if (line.rfind("  ", 0) == 0 && line.size() > 2 && line[2] != ' ') names.push_back(first_word(line));
  return names;
}

}  // namespace aggsim::test
