#include "sim/core/params.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <stdexcept>

#include "sim/core/strings.hpp"
#include "sim/core/units.hpp"

namespace aggsim {

const ParamValue& Params::at(const std::string& key) const {
  auto it = values_.find(key);
  if (it == values_.end()) throw std::logic_error("parameter '" + key + "' was not declared or has no value");
  return it->second;
}

double Params::real(const std::string& key) const {
  const ParamValue& v = at(key);
  if (auto* i = std::get_if<std::int64_t>(&v)) return static_cast<double>(*i);
  return std::get<double>(v);
}

const char* param_kind_name(ParamKind kind) {
  switch (kind) {
    case ParamKind::integer:
      return "integer";
    case ParamKind::real:
      return "number";
    case ParamKind::boolean:
      return "boolean";
    case ParamKind::text:
      return "string";
    case ParamKind::choice:
      return "choice";
    case ParamKind::bytes:
      return "size";
    case ParamKind::bandwidth:
      return "bandwidth";
    case ParamKind::duration:
      return "duration";
    case ParamKind::speed:
      return "speed";
    case ParamKind::integer_list:
      return "integer list";
    case ParamKind::rows:
      return "rows";
    case ParamKind::files:
      return "file(s)";
  }
  return "?";
}

namespace {

std::string range_text(const ParamSpec& spec) {
  const bool has_min = spec.min > -1e299, has_max = spec.max < 1e299;
  if (has_min && has_max) return fmt::format(" in [{}, {}]", spec.min, spec.max);
  if (has_min) return spec.min == 0 ? " >= 0" : fmt::format(" >= {}", spec.min);
  if (has_max) return fmt::format(" <= {}", spec.max);
  return "";
}

void check_range(const ParamSpec& spec, double v) {
  if (v < spec.min || v > spec.max) {
    const char* noun =
        spec.kind == ParamKind::integer || spec.kind == ParamKind::integer_list ? "an integer" : "a value";
    // The bound the value broke is named even where it is the default one (+-1e300).
    std::string range = range_text(spec);
    if (v > spec.max && !(spec.max < 1e299)) range = fmt::format("{}{}<= {}", range, range.empty() ? " " : " and ", spec.max);
    if (v < spec.min && !(spec.min > -1e299)) range = fmt::format("{}{}>= {}", range, range.empty() ? " " : " and ", spec.min);
    throw std::invalid_argument(fmt::format("must be {}{}", noun, range));
  }
}

std::int64_t parse_integer(const ParamSpec& spec, const std::string& text) {
  std::size_t used = 0;
  long long v = 0;
  try {
    v = std::stoll(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size())
    throw std::invalid_argument(fmt::format("must be an integer{} (got '{}')", range_text(spec), text));
  check_range(spec, static_cast<double>(v));
  return v;
}

double parse_real(const ParamSpec& spec, const std::string& text) {
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size() || !std::isfinite(v))
    throw std::invalid_argument(fmt::format("must be a number{} (got '{}')", range_text(spec), text));
  check_range(spec, v);
  return v;
}

bool parse_boolean(const std::string& text) {
  static const std::vector<std::string> yes = {"true", "on", "yes", "True", "On", "Yes", "TRUE", "ON", "YES"};
  static const std::vector<std::string> no = {"false", "off",   "no",  "False", "Off",
                                              "No",    "FALSE", "OFF", "NO"};
  for (const auto& y : yes)
    if (text == y) return true;
  for (const auto& n : no)
    if (text == n) return false;
  throw std::invalid_argument(fmt::format("must be true or false (got '{}')", text));
}

std::string parse_choice(const ParamSpec& spec, const std::string& text) {
  for (const auto& c : spec.choices)
    if (text == c) return text;
  // Choices are lower case; NCCL_PROTO and friends are often written LL128, Simple, Ring.
  std::string lower = text;
  for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  throw std::invalid_argument(fmt::format("must be one of {} (got '{}'){}", fmt::join(spec.choices, " | "),
                                          text, did_you_mean_name(lower, spec.choices)));
}

// A bandwidth or a speed: positive, and at least `minimum`, below which `too_low` says what would go
// wrong; then within the spec's range.
double check_rate(const ParamSpec& spec, double v, const std::string& text, const char* what, double minimum,
                  const char* too_low) {
  if (v <= 0) throw std::invalid_argument(fmt::format("must be a positive {} (got '{}')", what, text));
  if (v < minimum) throw std::invalid_argument(fmt::format("{} (got '{}')", too_low, text));
  check_range(spec, v);
  return v;
}

double parse_bandwidth_param(const ParamSpec& spec, const std::string& text) {
  return check_rate(spec, units::parse_bandwidth(text), text, "bandwidth", units::kMinBandwidth,
                    "must be at least 1Bps (8bps), the slowest link aggsim simulates: below it SimGrid's "
                    "solver loses transfers or a step outlasts its clock");
}

double parse_speed_param(const ParamSpec& spec, const std::string& text) {
  return check_rate(spec, units::parse_speed(text), text, "speed", units::kMinSpeed,
                    "must be at least 1f (one flop per second), the slowest host aggsim simulates: below it "
                    "a step can outlast the simulated clock");
}

// One row of the text form of `rows`: numbers separated by spaces (commas already made spaces).
std::vector<double> parse_number_row(const ParamSpec& spec, const std::string& row_text,
                                     const std::string& text) {
  std::vector<double> row;
  std::size_t pos = 0;
  while (pos < row_text.size()) {
    if (row_text[pos] == ' ') {
      ++pos;
      continue;
    }
    std::size_t used = 0;
    double v = 0;
    try {
      v = std::stod(row_text.substr(pos), &used);
    } catch (const std::exception&) {
      throw std::invalid_argument(
          fmt::format("must be rows of numbers, e.g. [[0, 1], [1, 2]] (got '{}')", text));
    }
    check_range(spec, v);
    row.push_back(v);
    pos += used;
  }
  return row;
}

// Text form (defaults, resolved values): rows separated by ';', numbers by ',' or spaces.
NumberRows parse_rows(const ParamSpec& spec, const std::string& text) {
  NumberRows out;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t semi = text.find(';', start);
    std::string row_text = text.substr(start, semi == std::string::npos ? std::string::npos : semi - start);
    for (char& c : row_text)
      if (c == ',') c = ' ';
    std::vector<double> row = parse_number_row(spec, row_text, text);
    if (!row.empty()) out.push_back(std::move(row));
    if (semi == std::string::npos) break;
    start = semi + 1;
  }
  return out;
}

}  // namespace

ParamValue parse_param(const ParamSpec& spec, const std::string& text) {
  switch (spec.kind) {
    case ParamKind::integer:
      return parse_integer(spec, text);
    case ParamKind::real:
      return parse_real(spec, text);
    case ParamKind::boolean:
      return parse_boolean(text);
    case ParamKind::text:
      return text;
    case ParamKind::choice:
      return parse_choice(spec, text);
    case ParamKind::bytes: {
      auto v = static_cast<double>(units::parse_bytes(text));
      check_range(spec, v);
      return static_cast<std::int64_t>(v);
    }
    case ParamKind::bandwidth:
      return parse_bandwidth_param(spec, text);
    case ParamKind::duration: {
      double v = units::parse_duration(text);
      check_range(spec, v);
      return v;
    }
    case ParamKind::speed:
      return parse_speed_param(spec, text);
    case ParamKind::integer_list: {
      // Defaults are written "2,4,8"; YAML sequences arrive element by element through the loader.
      std::vector<std::int64_t> out;
      if (!text.empty())
        for (const std::string& item : split_list(text)) out.push_back(parse_integer(spec, item));
      return out;
    }
    case ParamKind::rows:
      return parse_rows(spec, text);
    case ParamKind::files:
      // Text form (defaults, --set of one file): one path, found by the scenario loader.
      if (text.empty()) throw std::invalid_argument("must name a file");
      return std::vector<std::string>{text};
  }
  throw std::logic_error("unknown parameter kind");
}

std::string format_param(const ParamSpec& spec, const ParamValue& value) {
  return std::visit(
      [&](const auto& v) -> std::string {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, bool>) {
          return v ? "true" : "false";
        } else if constexpr (std::is_same_v<T, std::int64_t>) {
          return spec.kind == ParamKind::bytes ? fmt::format("{}B", v) : fmt::format("{}", v);
        } else if constexpr (std::is_same_v<T, double>) {
          switch (spec.kind) {
            case ParamKind::bandwidth:
              return fmt::format("{}Bps", v);
            case ParamKind::duration:
              return fmt::format("{}s", v);
            case ParamKind::speed:
              return fmt::format("{}f", v);
            default:
              return fmt::format("{}", v);
          }
        } else if constexpr (std::is_same_v<T, std::string>) {
          return v;
        } else if constexpr (std::is_same_v<T, std::vector<std::int64_t>>) {
          return fmt::format("{}", fmt::join(v, ","));
        } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
          return fmt::format("{}", fmt::join(v, ", "));
        } else {
          std::string out;
          for (const auto& row : v) out += fmt::format("{}{}", out.empty() ? "" : "; ", fmt::join(row, ", "));
          return out;
        }
      },
      value);
}

std::vector<ParamGroup> group_params(const std::vector<ParamSpec>& specs) {
  std::vector<ParamGroup> groups = {{"", {}}};
  for (const auto& spec : specs) {
    const auto dot = spec.key.find('.');
    const std::string prefix = dot == std::string::npos ? "" : spec.key.substr(0, dot);
    auto it =
        std::find_if(groups.begin(), groups.end(), [&](const ParamGroup& g) { return g.prefix == prefix; });
    if (it == groups.end()) it = groups.insert(groups.end(), ParamGroup{prefix, {}});
    ParamSpec inner = spec;
    if (!prefix.empty()) inner.key = spec.key.substr(dot + 1);
    it->specs.push_back(std::move(inner));
  }
  return groups;
}

Params default_params(const std::vector<ParamSpec>& specs) {
  Params p;
  for (const auto& s : specs)
    if (!s.default_text.empty()) p.set(s.key, parse_param(s, s.default_text));
  return p;
}

}  // namespace aggsim
