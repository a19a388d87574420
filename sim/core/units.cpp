#include "sim/core/units.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <simgrid/Exception.hpp>
#include <stdexcept>
#include <xbt/parse_units.hpp>

namespace aggsim::units {
namespace {

// SimGrid's own unit parsers (xbt/parse_units.hpp): a scenario accepts exactly the spellings a
// platform XML does. They take a file and line for their message; aggsim words its own.
using SimgridParser = double (*)(const std::string& file, int line, const std::string& text,
                                 const std::string& entity_kind);

double simgrid_value(SimgridParser parse, const std::string& text) {
  // An empty entity kind keeps SimGrid from warning about a unit-less value (a bare number is
  // deprecated in platform XML; aggsim takes it as the base unit, as SimGrid does).
  return parse("", 0, text, "");
}

bool simgrid_accepts(SimgridParser parse, const std::string& text) {
  try {
    simgrid_value(parse, text);
    return true;
  } catch (const simgrid::Exception&) {
    return false;
  }
}

// The value of `text`; rejects what SimGrid's grammar does not take, and negative or non-finite
// numbers, which it takes (strtod reads "-1", "inf" and "nan") but no quantity here may be.
double parse_quantity(const std::string& text, const char* what, SimgridParser parse, const char* examples) {
  std::size_t used = 0;
  double number = 0;
  try {
    number = std::stod(text, &used);  // the number SimGrid's strtod reads: where its unit starts
  } catch (const std::exception&) {
    throw std::invalid_argument(
        fmt::format("'{}' is not a {} (expected a number with an optional unit)", text, what));
  }
  if (!std::isfinite(number) || number < 0)
    throw std::invalid_argument(
        fmt::format("'{}' is not a valid {}: must be a finite non-negative number", text, what));
  try {
    return simgrid_value(parse, text);
  } catch (const simgrid::Exception&) {
  }
  const std::string number_text = text.substr(0, used), unit = text.substr(used);
  const std::string trimmed = unit.substr(std::min(unit.find_first_not_of(' '), unit.size()));
  if (trimmed != unit && simgrid_accepts(parse, number_text + trimmed))
    throw std::invalid_argument(
        fmt::format("'{}': write the unit right after the number ('{}{}')", text, number_text, trimmed));
  // Spellings aggsim took before it used SimGrid's grammar: kilo as 'K', and "Gflops" for "Gf".
  std::string guess = trimmed;
  if (!guess.empty() && guess.front() == 'K' && guess.rfind("Ki", 0) != 0) guess.front() = 'k';
  if (guess.size() > 5 && guess.compare(guess.size() - 5, 5, "flops") == 0)
    guess.replace(guess.size() - 5, 5, "f");
  const std::string hint = guess != trimmed && simgrid_accepts(parse, number_text + guess)
                               ? fmt::format("; did you mean '{}'?", guess)
                               : "";
  throw std::invalid_argument(
      fmt::format("'{}' has an unknown {} unit '{}' (use e.g. {}{})", text, what, trimmed, examples, hint));
}

}  // namespace

std::uint64_t parse_bytes(const std::string& text) {
  const double v = parse_quantity(text, "size", xbt_parse_get_size, "100MB, 64MiB, 4096");
  if (v != std::floor(v))
    throw std::invalid_argument(fmt::format("'{}' is not a whole number of bytes", text));
  // Sizes are held in signed 64-bit integers; 2^63 and above would not survive the conversion.
  if (v >= 9223372036854775808.0)
    throw std::invalid_argument(fmt::format(
        "'{}' is too large: sizes must be below 2^63 bytes (9223372036854775808 B, about 9.2 EB)", text));
  return static_cast<std::uint64_t>(v);
}

double parse_bandwidth(const std::string& text) {
  return parse_quantity(text, "bandwidth", xbt_parse_get_bandwidth, "10Gbps, 25GBps, 100MBps");
}

double parse_duration(const std::string& text) {
  return parse_quantity(text, "duration", xbt_parse_get_time, "1us, 0.5ms, 2s");
}

double parse_speed(const std::string& text) {
  return parse_quantity(text, "speed", xbt_parse_get_speed, "100Gf, 1Tf");
}

std::string format_bytes(double bytes) {
  static const char* names[] = {"B", "kB", "MB", "GB", "TB", "PB"};
  int i = 0;
  while (bytes >= 1000.0 && i < 5) {
    bytes /= 1000.0;
    ++i;
  }
  return i == 0 ? fmt::format("{:.0f} B", bytes) : fmt::format("{:.3g} {}", bytes, names[i]);
}

std::string format_duration(double seconds) {
  if (seconds == 0) return "0 s";
  if (seconds < 1e-6) return fmt::format("{:.3g} ns", seconds * 1e9);
  if (seconds < 1e-3) return fmt::format("{:.3g} us", seconds * 1e6);
  if (seconds < 1) return fmt::format("{:.3g} ms", seconds * 1e3);
  return fmt::format("{:.4g} s", seconds);
}

}  // namespace aggsim::units
