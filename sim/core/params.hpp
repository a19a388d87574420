#pragma once
// Typed, documented, defaulted parameters. Algorithms, compressors and platform generators declare
// theirs as ParamSpecs; the scenario loader checks YAML against them (with file:line on errors) and
// hands over plain Params, so no component ever reads YAML. `aggsim list` prints the same specs.
#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "sim/core/data_files.hpp"

namespace aggsim {

enum class ParamKind {
  integer,       // whole number within [min, max]
  real,          // floating point within [min, max]
  boolean,       // true/false (also on/off, yes/no)
  text,          // free string
  choice,        // one of `choices`
  bytes,         // "100MB", "64MiB", bare = bytes
  bandwidth,     // "10Gbps", "25GBps"; stored as bytes per second
  duration,      // "1us", "2ms"; stored as seconds
  speed,         // "100Gf"; stored as flop/s
  integer_list,  // [2, 4, 8]
  rows,          // rows of numbers: [[0, 1], [1, 2, 0.5]] (edge lists, small tables)
  files          // an input file or a list of them, each found like platform files (relative to
                 // the working folder, else to the scenario's); stored as the paths found
};

struct ParamSpec {
  // ParamSpec("hosts", ParamKind::integer, "", "number of hosts").needed().between(1, 1 << 22)
  ParamSpec(std::string key_, ParamKind kind_, std::string default_text_ = "", std::string help_ = "")
      : key(std::move(key_)), kind(kind_), default_text(std::move(default_text_)), help(std::move(help_)) {}
  ParamSpec& needed() {
    required = true;
    return *this;
  }
  ParamSpec& at_least(double lo) {
    min = lo;
    return *this;
  }
  ParamSpec& between(double lo, double hi) {
    min = lo;
    max = hi;
    return *this;
  }
  ParamSpec& one_of(std::vector<std::string> values) {
    kind = ParamKind::choice;
    choices = std::move(values);
    return *this;
  }
  // For `files`: a bare name names a shipped file of this kind (sim/core/data_files.hpp).
  ParamSpec& shipped_as(DataKind k) {
    data_kind = k;
    return *this;
  }
  // How the key reference names the type when the loader reads the value its own way (a list or a
  // mapping, a keyword or a unit).
  ParamSpec& shown_as(std::string type) {
    shown_type = std::move(type);
    return *this;
  }

  std::string key;
  ParamKind kind = ParamKind::integer;
  std::string default_text;  // as written in YAML; empty with required=false means "absent"
  std::string help;
  bool required = false;
  double min = -1e300;
  double max = 1e300;
  std::vector<std::string> choices;
  std::string shown_type;  // empty: param_kind_name(kind)
  DataKind data_kind = DataKind::other;  // files: the shipped files a bare name names
};

using NumberRows = std::vector<std::vector<double>>;
using ParamValue = std::variant<bool, std::int64_t, double, std::string, std::vector<std::int64_t>,
                                NumberRows, std::vector<std::string>>;

class Params {
 public:
  void set(const std::string& key, ParamValue value) { values_[key] = std::move(value); }
  bool has(const std::string& key) const { return values_.count(key) != 0; }

  std::int64_t integer(const std::string& key) const { return std::get<std::int64_t>(at(key)); }
  double real(const std::string& key) const;  // accepts integers too
  bool boolean(const std::string& key) const { return std::get<bool>(at(key)); }
  const std::string& text(const std::string& key) const { return std::get<std::string>(at(key)); }
  const std::vector<std::int64_t>& integers(const std::string& key) const {
    return std::get<std::vector<std::int64_t>>(at(key));
  }
  const NumberRows& rows(const std::string& key) const { return std::get<NumberRows>(at(key)); }
  const std::vector<std::string>& files(const std::string& key) const {
    return std::get<std::vector<std::string>>(at(key));
  }
  const std::map<std::string, ParamValue>& all() const { return values_; }

 private:
  const ParamValue& at(const std::string& key) const;
  std::map<std::string, ParamValue> values_;
};

const char* param_kind_name(ParamKind kind);

// A spec key "graph.kind" stands for `kind` inside a nested mapping `graph:` of the component's
// YAML. group_params splits specs into the top-level ones (prefix "") followed by one group per
// prefix, in order of first appearance, with the prefix stripped from the keys.
struct ParamGroup {
  std::string prefix;
  std::vector<ParamSpec> specs;
};
std::vector<ParamGroup> group_params(const std::vector<ParamSpec>& specs);

// A parameter combination a component rejects after each value passed its own spec (e.g. a graph
// that is not doubly stochastic). `key` is the offending key ("graph.edges", "op"), so the scenario
// loader can point at it in the file.
class ParamError : public std::invalid_argument {
 public:
  ParamError(std::string key_, const std::string& message)
      : std::invalid_argument(message), key(std::move(key_)) {}
  std::string key;
};

// Parses `text` for `spec` (used for defaults; YAML values go through the scenario loader, which
// calls this too). Throws std::invalid_argument with a message naming what was expected.
ParamValue parse_param(const ParamSpec& spec, const std::string& text);

// Canonical text of a value (what resolved.yaml and `aggsim list` show); parse_param reads it back.
std::string format_param(const ParamSpec& spec, const ParamValue& value);

// Params filled with every spec's default (for components built without a scenario, e.g. in tests).
Params default_params(const std::vector<ParamSpec>& specs);

}  // namespace aggsim
