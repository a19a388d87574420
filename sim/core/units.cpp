#include "sim/core/units.hpp"

#include <cmath>
#include <fmt/format.h>
#include <stdexcept>
#include <utility>
#include <vector>

namespace aggsim::units {
namespace {

struct Suffix {
  std::string text;
  double factor;
};

// Splits "12.5Gbps" into 12.5 and "Gbps"; rejects empty, negative and non-finite numbers.
std::pair<double, std::string> split_number(const std::string& text, const char* what) {
  std::size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    throw std::invalid_argument(
        fmt::format("'{}' is not a {} (expected a number with an optional unit)", text, what));
  }
  if (!std::isfinite(value) || value < 0)
    throw std::invalid_argument(
        fmt::format("'{}' is not a valid {}: must be a finite non-negative number", text, what));
  std::string suffix = text.substr(used);
  while (!suffix.empty() && suffix.front() == ' ') suffix.erase(suffix.begin());
  return {value, suffix};
}

double apply_suffix(const std::string& text, const char* what, const std::vector<Suffix>& suffixes,
                    const char* examples) {
  auto [value, suffix] = split_number(text, what);
  for (const auto& s : suffixes)
    if (suffix == s.text) return value * s.factor;
  throw std::invalid_argument(
      fmt::format("'{}' has an unknown {} unit '{}' (use e.g. {})", text, what, suffix, examples));
}

// Every decimal (k, M, G, ...) and binary (Ki, Mi, Gi, ...) prefix in front of each base unit.
std::vector<Suffix> prefixed(const std::vector<std::string>& bases, double base_factor) {
  static const std::vector<Suffix> prefixes = {
      {"", 1},         {"k", 1e3},           {"K", 1e3},           {"M", 1e6},
      {"G", 1e9},      {"T", 1e12},          {"P", 1e15},          {"Ki", 1024.0},
      {"Mi", 1048576.0}, {"Gi", 1073741824.0}, {"Ti", 1099511627776.0}, {"Pi", 1125899906842624.0}};
  std::vector<Suffix> out;
  for (const auto& base : bases)
    for (const auto& p : prefixes) out.push_back({p.text + base, p.factor * base_factor});
  return out;
}

const std::vector<Suffix>& byte_suffixes() {
  static const std::vector<Suffix> s = [] {
    auto v = prefixed({"B"}, 1.0);
    v.push_back({"", 1.0});
    return v;
  }();
  return s;
}

const std::vector<Suffix>& bandwidth_suffixes() {
  static const std::vector<Suffix> s = [] {
    auto bytes = prefixed({"Bps"}, 1.0);
    auto bits = prefixed({"bps"}, 0.125);
    bytes.insert(bytes.end(), bits.begin(), bits.end());
    bytes.push_back({"", 1.0});
    return bytes;
  }();
  return s;
}

const std::vector<Suffix>& speed_suffixes() {
  static const std::vector<Suffix> s = [] {
    auto v = prefixed({"f", "flops"}, 1.0);
    v.push_back({"", 1.0});
    return v;
  }();
  return s;
}

}  // namespace

std::uint64_t parse_bytes(const std::string& text) {
  double v = apply_suffix(text, "size", byte_suffixes(), "100MB, 64MiB, 4096");
  if (v != std::floor(v)) throw std::invalid_argument(fmt::format("'{}' is not a whole number of bytes", text));
  // Sizes are held in signed 64-bit integers; 2^63 and above would not survive the conversion.
  if (v >= 9223372036854775808.0)
    throw std::invalid_argument(fmt::format(
        "'{}' is too large: sizes must be below 2^63 bytes (9223372036854775808 B, about 9.2 EB)", text));
  return static_cast<std::uint64_t>(v);
}

double parse_bandwidth(const std::string& text) {
  return apply_suffix(text, "bandwidth", bandwidth_suffixes(), "10Gbps, 25GBps, 100MBps");
}

double parse_duration(const std::string& text) {
  static const std::vector<Suffix> s = {{"w", 604800.0}, {"d", 86400.0}, {"h", 3600.0}, {"m", 60.0},
                                        {"s", 1.0},      {"ms", 1e-3},   {"us", 1e-6},  {"ns", 1e-9},
                                        {"ps", 1e-12},   {"", 1.0}};
  return apply_suffix(text, "duration", s, "1us, 0.5ms, 2s");
}

double parse_speed(const std::string& text) {
  return apply_suffix(text, "speed", speed_suffixes(), "100Gf, 1Tf");
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
