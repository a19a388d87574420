#pragma once
// Quantities in SimGrid's unit grammar, read by SimGrid's own parser (xbt/parse_units.hpp), so a
// scenario takes exactly what a platform XML takes: "10Gbps", "25GBps", "1us", "100MB", "64MiB",
// "100Gf". Decimal prefixes are powers of 10 (100MB = 10^8 bytes), binary ones powers of 2
// (MiB = 2^20). A bare number is bytes, bytes per second, seconds or flop/s. Negative and non-finite
// values are refused. Parsers throw std::invalid_argument with a message that says what was expected.
#include <cstdint>
#include <string>

namespace aggsim::units {

// The slowest link and host aggsim simulates: one byte, one operation a second, far below any real
// hardware. Below that SimGrid's flow solver stops being exact (under LV08 a link of 1e-10 B/s
// completes its transfers at once, a wrong result) and a rate near 1e-300 lets a step last longer
// than a double can count (an infinite clock, reported as a deadlock).
constexpr double kMinBandwidth = 1;  // bytes per second ("1Bps", "8bps")
constexpr double kMinSpeed = 1;      // flop per second ("1f")

std::uint64_t parse_bytes(const std::string& text);
double parse_bandwidth(const std::string& text);  // bytes per second
double parse_duration(const std::string& text);   // seconds
double parse_speed(const std::string& text);      // flop per second

std::string format_bytes(double bytes);       // "1.5 MB"
std::string format_duration(double seconds);  // "12.3 ms"

}  // namespace aggsim::units
