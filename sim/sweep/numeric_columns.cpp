#include "sim/sweep/numeric_columns.hpp"

#include <fmt/format.h>

#include <cctype>
#include <functional>
#include <stdexcept>

#include "sim/core/units.hpp"

namespace aggsim {

namespace {

struct QuantityKind {
  const char* column_suffix;
  std::function<double(const std::string&)> parse;   // to SI base units; throws when not this kind
  std::function<bool(const std::string&)> has_unit;  // the unit says this kind (not a bare number)
};

std::string unit_of(const std::string& text) {
  std::size_t i = 0;
  while (i < text.size() &&
         (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.' || text[i] == '+' ||
          text[i] == '-' || ((text[i] == 'e' || text[i] == 'E') && i > 0)))
    ++i;
  std::string unit = text.substr(i);
  while (!unit.empty() && unit.front() == ' ') unit.erase(unit.begin());
  return unit;
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

const std::vector<QuantityKind>& kinds() {
  static const std::vector<QuantityKind> table = {
      {"_Bps", units::parse_bandwidth,
       [](const std::string& u) { return ends_with(u, "bps") || ends_with(u, "Bps"); }},
      {"_bytes", [](const std::string& t) { return static_cast<double>(units::parse_bytes(t)); },
       [](const std::string& u) { return ends_with(u, "B"); }},
      {"_flops", units::parse_speed,
       [](const std::string& u) { return ends_with(u, "f") || ends_with(u, "flops"); }},
      {"_s", units::parse_duration,
       [](const std::string& u) {
         return u == "s" || u == "ms" || u == "us" || u == "ns" || u == "ps" || u == "m" || u == "h" ||
                u == "d" || u == "w";
       }},
  };
  return table;
}

}  // namespace

std::optional<NumericColumn> numeric_column(const std::string& key, const std::vector<std::string>& values) {
  for (const QuantityKind& kind : kinds()) {
    bool any_unit = false;
    for (const auto& v : values) any_unit = any_unit || kind.has_unit(unit_of(v));
    if (!any_unit) continue;
    NumericColumn column{key + kind.column_suffix, {}};
    try {
      for (const auto& v : values) column.cells.push_back(fmt::format("{}", kind.parse(v)));
    } catch (const std::invalid_argument&) {
      return std::nullopt;  // mixed kinds (or not quantities): leave the values as written
    }
    return column;
  }
  return std::nullopt;
}

}  // namespace aggsim
