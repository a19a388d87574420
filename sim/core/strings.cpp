#include "sim/core/strings.hpp"

#include <algorithm>
#include <cctype>

namespace aggsim {

std::vector<std::string> split_list(const std::string& text, char separator) {
  std::vector<std::string> items;
  std::size_t begin = 0;
  while (true) {
    const std::size_t end = text.find(separator, begin);
    const std::string item = text.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
    const auto first = item.find_first_not_of(" \t"), last = item.find_last_not_of(" \t");
    items.push_back(first == std::string::npos ? "" : item.substr(first, last - first + 1));
    if (end == std::string::npos) return items;
    begin = end + 1;
  }
}

bool natural_less(const std::string& a, const std::string& b) {
  std::size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (std::isdigit(static_cast<unsigned char>(a[i])) && std::isdigit(static_cast<unsigned char>(b[j]))) {
      std::size_t i2 = i, j2 = j;
      while (i2 < a.size() && std::isdigit(static_cast<unsigned char>(a[i2]))) ++i2;
      while (j2 < b.size() && std::isdigit(static_cast<unsigned char>(b[j2]))) ++j2;
      // Compare digit runs by value: strip leading zeros, then by length, then lexically.
      std::size_t ia = i, jb = j;
      while (ia + 1 < i2 && a[ia] == '0') ++ia;
      while (jb + 1 < j2 && b[jb] == '0') ++jb;
      if (i2 - ia != j2 - jb) return i2 - ia < j2 - jb;
      int c = a.compare(ia, i2 - ia, b, jb, j2 - jb);
      if (c != 0) return c < 0;
      if (i2 - i != j2 - j) return i2 - i < j2 - j;  // "01" after "1": total order
      i = i2;
      j = j2;
    } else {
      if (a[i] != b[j]) return a[i] < b[j];
      ++i;
      ++j;
    }
  }
  return a.size() - i < b.size() - j;
}

std::vector<std::string> split_flow_list(const std::string& text) {
  std::vector<std::string> raw;
  std::string current;
  int depth = 0;
  char quote = 0;
  for (char c : text) {
    if (quote) {
      quote = c == quote ? 0 : quote;
    } else if (c == '\'' || c == '"') {
      quote = c;
    } else if (c == '[' || c == '{') {
      ++depth;
    } else if (c == ']' || c == '}') {
      --depth;
    } else if (c == ',' && depth == 0) {
      raw.push_back(current);
      current.clear();
      continue;
    }
    current += c;
  }
  raw.push_back(current);
  std::vector<std::string> out;
  for (const auto& item : raw) out.push_back(split_list(item, '\0').front());  // trims like split_list
  return out;
}

namespace {

// Levenshtein distance: insertions, deletions and substitutions each cost one.
std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

}  // namespace

std::string closest_name(const std::string& given, const std::vector<std::string>& known) {
  std::string closest;
  std::size_t best = 3;
  for (const auto& name : known) {
    const std::size_t d = edit_distance(given, name);
    if (d < best) {
      best = d;
      closest = name;
    }
  }
  return closest;
}

std::string did_you_mean(const std::string& given, const std::vector<std::string>& known) {
  const std::string closest = closest_name(given, known);
  return closest.empty() ? "" : " (did you mean '" + closest + "'?)";
}

std::string did_you_mean_name(const std::string& given, const std::vector<std::string>& known) {
  if (std::string hint = did_you_mean(given, known); !hint.empty() || given.empty()) return hint;
  std::vector<std::string> prefixed, worded;
  for (const auto& name : known) {
    if (name.size() > given.size() && name.compare(0, given.size(), given) == 0 &&
        (name[given.size()] == '_' || std::isdigit(static_cast<unsigned char>(name[given.size()]))))
      prefixed.push_back(name);
    const std::string padded = "_" + name + "_";
    if (padded.find("_" + given + "_") != std::string::npos) worded.push_back(name);
  }
  if (prefixed.size() == 1) return " (did you mean '" + prefixed.front() + "'?)";
  if (worded.size() == 1) return " (did you mean '" + worded.front() + "'?)";
  return "";
}

std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\n\r") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string csv_row(const std::vector<std::string>& fields) {
  std::string row;
  for (std::size_t i = 0; i < fields.size(); ++i) row += (i ? "," : "") + csv_field(fields[i]);
  return row + "\n";
}

std::string markdown_cell(const std::string& text) {
  std::string out;
  bool code = false;
  for (char c : text) {
    if (c == '`') code = !code;
    if (c == '|')
      out += "\\|";
    else if (!code && c == '<')
      out += "&lt;";
    else if (!code && c == '>')
      out += "&gt;";
    else
      out += c;
  }
  return out;
}

std::string shell_quote(const std::string& text) {
  std::string quoted = "'";
  for (char c : text) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

std::size_t utf8_sequence(const std::string& text, std::size_t i, std::uint32_t& cp) {
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  const std::size_t n = text.size();
  const unsigned char c = s[i];
  std::size_t len = 0;
  std::uint32_t min = 0;
  if (c < 0x80) {
    cp = c;
    return 1;
  } else if ((c & 0xE0) == 0xC0) {
    len = 2, cp = c & 0x1F, min = 0x80;
  } else if ((c & 0xF0) == 0xE0) {
    len = 3, cp = c & 0x0F, min = 0x800;
  } else if ((c & 0xF8) == 0xF0) {
    len = 4, cp = c & 0x07, min = 0x10000;
  } else {
    return 0;
  }
  if (i + len > n) return 0;
  for (std::size_t k = 1; k < len; ++k) {
    if ((s[i + k] & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (s[i + k] & 0x3F);
  }
  const bool well_formed = cp >= min && cp <= 0x10FFFF && !(cp >= 0xD800 && cp <= 0xDFFF);
  return well_formed ? len : 0;
}

}  // namespace aggsim
