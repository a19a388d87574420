#include "sim/core/log_words.hpp"

#include <cmath>
#include <cstdlib>
#include <sstream>

namespace aggsim::readers {

std::string shown_word(const std::string& word, std::size_t most) {
  return word.size() <= most ? word : word.substr(0, most) + "...";
}

std::vector<std::string> split_words(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

bool parse_number(const std::string& word, double& value) {
  if (word.empty()) return false;
  char* end = nullptr;
  value = std::strtod(word.c_str(), &end);
  return end == word.c_str() + word.size() && std::isfinite(value);
}

}  // namespace aggsim::readers
