#pragma once
// Arithmetic on sizes and counters that cannot silently wrap.
// - checked_mul/checked_add: products of shapes and sums of sizes; std::nullopt when the exact
//   result does not fit, so loaders refuse the input with its location.
// - add_saturating: byte and message counters. A counter that would pass 2^64 - 1 stays there and
//   a one-time warning on stderr says the totals are lower bounds (a run cannot know beforehand
//   how many bytes its algorithm will send, so refusing up front would refuse valid scenarios).
#include <charconv>
#include <cstdint>
#include <optional>
#include <string_view>

namespace aggsim {

// For any integer type T (both operands the same type, so no silent conversion).
template <class T>
std::optional<T> checked_mul(T a, T b) {
  T out = 0;
  if (__builtin_mul_overflow(a, b, &out)) return std::nullopt;
  return out;
}

template <class T>
std::optional<T> checked_add(T a, T b) {
  T out = 0;
  if (__builtin_add_overflow(a, b, &out)) return std::nullopt;
  return out;
}

// The whole of `text` as a decimal integer of type T (digits, an optional leading '-' for signed
// types): std::nullopt when it is anything else or does not fit, so readers refuse it with its
// location instead of throwing std::out_of_range ("stoi") or wrapping.
template <class T>
std::optional<T> parse_integer_text(std::string_view text) {
  T value{};
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || text.empty()) return std::nullopt;
  return value;
}

// Prints the saturation warning once per process.
void warn_counter_saturated();

inline void add_saturating(std::uint64_t& counter, std::uint64_t amount) {
  if (__builtin_add_overflow(counter, amount, &counter)) {
    counter = UINT64_MAX;
    warn_counter_saturated();
  }
}

}  // namespace aggsim
