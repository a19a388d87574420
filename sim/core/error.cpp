#include "sim/core/error.hpp"

#include <cstdint>

#include "sim/core/strings.hpp"

namespace aggsim {

namespace {

// Code points a terminal shows as nothing or that reorder what follows: C1 controls, zero-width
// and bidirectional formatting characters, the byte-order mark, line and paragraph separators.
bool invisible(std::uint32_t cp) {
  return (cp >= 0x80 && cp <= 0x9F) || (cp >= 0x200B && cp <= 0x200F) || (cp >= 0x2028 && cp <= 0x202E) ||
         (cp >= 0x2066 && cp <= 0x2069) || cp == 0xFEFF;
}

void escape_byte(std::string& out, unsigned char c) {
  static const char* hex = "0123456789ABCDEF";
  out += "\\x";
  out += hex[c >> 4];
  out += hex[c & 0xF];
}

}  // namespace

std::string printable(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  const std::size_t n = text.size();
  for (std::size_t i = 0; i < n;) {
    const unsigned char c = s[i];
    if (c >= 0x20 && c < 0x7F) {
      out += static_cast<char>(c);
      ++i;
      continue;
    }
    // A well-formed, printable UTF-8 sequence stays; anything else is escaped byte by byte.
    std::uint32_t cp = 0;
    std::size_t len = c >= 0x80 ? utf8_sequence(text, i, cp) : 0;
    const bool ok = len != 0 && !invisible(cp);
    if (!ok) len = 1;
    for (std::size_t k = 0; k < len; ++k) {
      if (ok)
        out += static_cast<char>(s[i + k]);
      else
        escape_byte(out, s[i + k]);
    }
    i += len;
  }
  return out;
}

std::string printable_lines(const std::string& text) {
  std::string out;
  std::size_t begin = 0;
  for (std::size_t end; (end = text.find('\n', begin)) != std::string::npos; begin = end + 1)
    out += printable(text.substr(begin, end - begin)) + '\n';
  return out + printable(text.substr(begin));
}

namespace {

std::string with_context(const std::string& message, const std::vector<std::string>& context) {
  std::string out = printable(message);
  for (const auto& line : context) out += "\n  " + printable(line);
  return out;
}

}  // namespace

// The base class takes the finished text as it is (printable() would escape the line breaks).
InputError::InputError(const std::string& message, const std::vector<std::string>& context)
    : std::runtime_error(with_context(message, context)) {}

}  // namespace aggsim
