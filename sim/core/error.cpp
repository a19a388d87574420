#include "sim/core/error.hpp"

#include <cstdint>

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
    std::size_t len = 0;
    std::uint32_t cp = 0, min = 0;
    if ((c & 0xE0) == 0xC0) {
      len = 2, cp = c & 0x1F, min = 0x80;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3, cp = c & 0x0F, min = 0x800;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4, cp = c & 0x07, min = 0x10000;
    }
    bool ok = len != 0 && i + len <= n;
    for (std::size_t k = 1; ok && k < len; ++k) {
      ok = (s[i + k] & 0xC0) == 0x80;
      cp = (cp << 6) | (s[i + k] & 0x3F);
    }
    ok = ok && cp >= min && cp <= 0x10FFFF && !(cp >= 0xD800 && cp <= 0xDFFF) && !invisible(cp);
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
