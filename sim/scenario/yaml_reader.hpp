#pragma once
// Checked reading of a YAML document: every access knows its key path and source position, so each
// error reads "file:line:col: key.path: what is wrong"; unknown keys are errors, with a suggestion.
#include <yaml-cpp/yaml.h>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "sim/core/data_files.hpp"
#include "sim/core/params.hpp"

namespace aggsim {

// Parses YAML text; a syntax error throws InputError "label:line:col: syntax error: ..." (with no
// text of the document in it).
YAML::Node parse_yaml(const std::string& text, const std::string& label);

// What an input file must be at its top level before any of its text may appear in a message: a
// mapping with at least one key the kind of file has. A file that is not (a scenario path given a
// password file, `calibration: /etc/shadow`) is refused by its place alone: a line such as
// "root:*:20228:..." is valid YAML, a mapping with one unknown key, and must not be repeated in an
// error that may end up in someone's logs.
struct FileSchema {
  std::string what;               // "scenario", "calibration file", "layer table", "sweep file"
  std::vector<std::string> keys;  // its top-level keys
};
// parse_yaml, then the schema check (before the duplicate-key check, which names keys).
YAML::Node parse_yaml(const std::string& text, const std::string& label, const FileSchema& schema);
// yaml-cpp keeps both entries of a key given twice in one mapping, and lookups find the first: both
// parse functions refuse that with "label:line:col: key.path: duplicate key (first given at line N)".
// `path` prefixes the key paths (a --set value's own key).
void check_duplicate_keys(const YAML::Node& root, const std::string& label, const std::string& path = "");

// Where values came from: a file, or --set overrides (reported as such).
struct YamlSource {
  std::string file;
  std::map<std::string, std::string> overrides;  // key path -> "--set key=value" text
};

class YamlValue {
 public:
  YamlValue(YAML::Node node, std::string path, std::shared_ptr<const YamlSource> source)
      : node_(std::move(node)), path_(std::move(path)), source_(std::move(source)) {}

  [[noreturn]] void fail(const std::string& message) const;
  std::string location() const;  // "file:line:col" or "--set key=value"
  const std::string& path() const { return path_; }
  const std::shared_ptr<const YamlSource>& source() const { return source_; }
  const YAML::Node& node() const { return node_; }
  // The value under `key` of this mapping (whatever it holds), with its path extended.
  YamlValue child(const std::string& key) const;
  YamlValue item(std::size_t index) const;

  bool is_map() const { return node_.IsMap(); }
  std::string scalar() const;  // fails unless a scalar
  std::int64_t integer(double min, double max) const;
  double real(double min, double max) const;
  bool boolean() const;
  std::uint64_t bytes() const;
  // A value checked against a ParamSpec (scalars, or sequences for integer lists).
  ParamValue param(const ParamSpec& spec) const;

 private:
  template <class F>
  auto parse_or_fail(F&& parse) const -> decltype(parse(std::string()));

  YAML::Node node_;
  std::string path_;
  std::shared_ptr<const YamlSource> source_;
};

// A mapping whose keys are claimed one by one; finish() rejects whatever was not claimed.
class YamlMap {
 public:
  explicit YamlMap(const YamlValue& value);  // fails unless a mapping

  std::optional<YamlValue> get(const std::string& key);
  YamlValue require(const std::string& key);
  // Reads every spec'd key into Params (defaults filled), claiming the keys.
  Params params(const std::vector<ParamSpec>& specs);
  // Unknown keys are errors naming the known ones, with a did-you-mean among them; failing that,
  // `elsewhere(key)` may add one pointing at where such a key belongs (another algorithm's keys, a
  // generated platform's), e.g. " (did you mean 'rank', a key of powersgd, not of topk?)".
  void finish(const std::function<std::string(const std::string&)>& elsewhere = {}) const;
  // Declares keys read later, so finish() can report unknown keys before any other check.
  void expect(const std::vector<std::string>& keys) { claimed_.insert(keys.begin(), keys.end()); }
  const YamlValue& value() const { return value_; }

 private:
  YamlValue value_;
  std::set<std::string> claimed_;
};

// The file named by `where` (a scalar): as given, relative to the scenario file's folder, then in the
// data folder, where a bare name names a shipped file of `kind` (sim/core/data_files.hpp); fails with
// "<what> file not found (looked for ...)", listing the shipped names.
std::string find_input_file(const YamlValue& where, const std::string& what, const std::string& scenario_file,
                            DataKind kind);

// yaml-cpp parses nested collections recursively: a document nested thousands deep overflows its
// stack. Refuses text nested deeper than kMaxYamlNesting (flow brackets, or block indentation
// levels), with the line of the first too-deep level, before YAML::Load sees it.
constexpr int kMaxYamlNesting = 64;
// It also holds every node of a document at once, about 470 bytes each (a 57 MB layer table of
// 10^6 rows took 4.2 GB): text with more than kMaxYamlValues keys, items and values (counted from
// lines, ':' ',' '[' and '{' outside quotes and comments, an upper bound) is refused at the line
// where the count passes it, so a refusal stays far below 1 GB.
constexpr std::int64_t kMaxYamlValues = std::int64_t{1} << 20;
void check_yaml_nesting(const std::string& text, const std::string& label);

// Writes every present value of `params` as `key: canonical text` into a mapping being emitted.
void emit_params(YAML::Emitter& out, const std::vector<ParamSpec>& specs, const Params& params);

}  // namespace aggsim
