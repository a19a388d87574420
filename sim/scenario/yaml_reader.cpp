#include "sim/scenario/yaml_reader.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <limits>

#include "sim/core/error.hpp"
#include "sim/core/input_file.hpp"
#include "sim/core/strings.hpp"
#include "sim/core/units.hpp"

namespace aggsim {
namespace {

std::string join_path(const std::string& parent, const std::string& key) {
  return parent.empty() ? key : parent + "." + key;
}

}  // namespace

YamlValue YamlValue::child(const std::string& key) const {
  return YamlValue(node_[key], join_path(path_, key), source_);
}

YamlValue YamlValue::item(std::size_t index) const {
  return YamlValue(node_[index], fmt::format("{}[{}]", path_, index), source_);
}

std::string YamlValue::location() const {
  for (const auto& [path, text] : source_->overrides)
    if (path_ == path || path_.rfind(path + ".", 0) == 0 || path_.rfind(path + "[", 0) == 0)
      return "--set " + text;
  const YAML::Mark mark = node_.Mark();
  if (mark.is_null()) {
    // A mapping that only --set made (--set compression.name=topk makes `compression`): the option.
    for (const auto& [path, text] : source_->overrides)
      if (!path_.empty() && (path.rfind(path_ + ".", 0) == 0 || path.rfind(path_ + "[", 0) == 0))
        return "--set " + text;
    return source_->file;
  }
  return fmt::format("{}:{}:{}", source_->file, mark.line + 1, mark.column + 1);
}

void YamlValue::fail(const std::string& message) const {
  throw InputError(fmt::format("{}: {}: {}", location(), path_.empty() ? "(top level)" : path_, message));
}

std::string YamlValue::scalar() const {
  if (!node_.IsScalar()) {
    if (node_.IsNull()) fail("needs a value");
    fail(node_.IsMap() ? "expected a single value, found a mapping"
                       : "expected a single value, found a list");
  }
  return node_.Scalar();
}

template <class F>
auto YamlValue::parse_or_fail(F&& parse) const -> decltype(parse(std::string())) {
  const std::string text = scalar();
  try {
    return parse(text);
  } catch (const std::invalid_argument& e) {
    fail(e.what());
  }
}

std::int64_t YamlValue::integer(double min, double max) const {
  ParamSpec spec("", ParamKind::integer);
  spec.min = min;
  spec.max = max;
  return parse_or_fail([&](const std::string& t) { return std::get<std::int64_t>(parse_param(spec, t)); });
}

double YamlValue::real(double min, double max) const {
  ParamSpec spec("", ParamKind::real);
  spec.min = min;
  spec.max = max;
  return parse_or_fail([&](const std::string& t) { return std::get<double>(parse_param(spec, t)); });
}

bool YamlValue::boolean() const {
  ParamSpec spec("", ParamKind::boolean);
  return parse_or_fail([&](const std::string& t) { return std::get<bool>(parse_param(spec, t)); });
}

std::uint64_t YamlValue::bytes() const {
  return parse_or_fail([](const std::string& t) { return units::parse_bytes(t); });
}

ParamValue YamlValue::param(const ParamSpec& spec) const {
  if (spec.kind == ParamKind::files) {
    std::vector<std::string> out;
    if (node_.IsSequence()) {
      for (std::size_t i = 0; i < node_.size(); ++i)
        out.push_back(find_input_file(item(i), spec.key, source_->file, spec.data_kind));
      if (out.empty()) fail("must not be an empty list");
    } else {
      out.push_back(find_input_file(*this, spec.key, source_->file, spec.data_kind));
    }
    return out;
  }
  if (spec.kind == ParamKind::integer_list) {
    if (node_.IsScalar()) return parse_or_fail([&](const std::string& t) { return parse_param(spec, t); });
    if (!node_.IsSequence()) fail("expected a list of integers, e.g. [2, 4]");
    std::vector<std::int64_t> out;
    for (std::size_t i = 0; i < node_.size(); ++i) {
      out.push_back(item(i).integer(spec.min, spec.max));
    }
    if (out.empty()) fail("must not be an empty list");
    return out;
  }
  if (spec.kind == ParamKind::rows) {
    if (node_.IsScalar()) return parse_or_fail([&](const std::string& t) { return parse_param(spec, t); });
    if (!node_.IsSequence()) fail("expected a list of rows of numbers, e.g. [[0, 1], [1, 2]]");
    NumberRows out;
    for (std::size_t i = 0; i < node_.size(); ++i) {
      const YamlValue row = item(i);
      if (!row.node().IsSequence()) row.fail("expected a row of numbers, e.g. [0, 1]");
      std::vector<double> numbers;
      for (std::size_t k = 0; k < row.node().size(); ++k)
        numbers.push_back(row.item(k).real(spec.min, spec.max));
      out.push_back(std::move(numbers));
    }
    return out;
  }
  return parse_or_fail([&](const std::string& t) { return parse_param(spec, t); });
}

YamlMap::YamlMap(const YamlValue& value) : value_(value) {
  if (!value.node().IsMap()) {
    if (value.node().IsNull()) value.fail("needs a mapping of keys, found nothing");
    value.fail("expected a mapping of keys");
  }
}

std::optional<YamlValue> YamlMap::get(const std::string& key) {
  claimed_.insert(key);
  if (!value_.node()[key]) return std::nullopt;
  return value_.child(key);
}

YamlValue YamlMap::require(const std::string& key) {
  auto v = get(key);
  if (!v) value_.fail(fmt::format("missing required key '{}'", key));
  return *v;
}

namespace {

// A key of `map` that is none of `known` but within reach of one: a misspelling, which explains a
// missing key better than "missing" does (`dimm` beside a missing `problem` is a typo of `dim`).
void fail_on_misspelt_key(const YamlValue& map, const std::vector<ParamSpec>& specs) {
  std::vector<std::string> known;
  for (const auto& group : group_params(specs))
    for (const auto& spec : group.specs) known.push_back(group.prefix.empty() ? spec.key : group.prefix);
  for (auto it = map.node().begin(); it != map.node().end(); ++it) {
    const std::string key = it->first.Scalar();
    if (std::find(known.begin(), known.end(), key) != known.end()) continue;
    if (const std::string hint = did_you_mean(key, known); !hint.empty())
      YamlValue(it->first, join_path(map.path(), key), map.source()).fail("unknown key" + hint);
  }
}

}  // namespace

Params YamlMap::params(const std::vector<ParamSpec>& specs) {
  Params out;
  for (const auto& group : group_params(specs)) {
    if (group.prefix.empty()) {
      for (const auto& spec : group.specs) {
        if (auto v = get(spec.key)) {
          out.set(spec.key, v->param(spec));
        } else if (spec.required) {
          fail_on_misspelt_key(value_, specs);
          value_.fail(fmt::format("missing required key '{}' ({})", spec.key, spec.help));
        } else if (!spec.default_text.empty()) {
          out.set(spec.key, parse_param(spec, spec.default_text));
        }
      }
      continue;
    }
    // Keys "graph.kind" live in a nested mapping `graph:`, checked like any other mapping.
    Params inner;
    if (auto v = get(group.prefix)) {
      YamlMap nested(*v);
      inner = nested.params(group.specs);
      nested.finish();
    } else {
      for (const auto& spec : group.specs)
        if (spec.required)
          value_.fail(fmt::format("missing required key '{}.{}' ({})", group.prefix, spec.key, spec.help));
      inner = default_params(group.specs);
    }
    for (const auto& [key, value] : inner.all()) out.set(group.prefix + "." + key, value);
  }
  return out;
}

void YamlMap::finish(const std::function<std::string(const std::string&)>& elsewhere) const {
  for (auto it = value_.node().begin(); it != value_.node().end(); ++it) {
    const std::string key = it->first.Scalar();
    if (claimed_.count(key)) continue;
    std::string hint = did_you_mean(key, {claimed_.begin(), claimed_.end()});
    if (hint.empty() && elsewhere) hint = elsewhere(key);
    std::string known_list = claimed_.empty() ? "none" : fmt::format("{}", fmt::join(claimed_, ", "));
    YamlValue at(it->first, join_path(value_.path(), key), value_.source());
    at.fail(fmt::format("unknown key{}; known keys here: {}", hint, known_list));
  }
}

std::string find_input_file(const YamlValue& where, const std::string& what, const std::string& scenario_file,
                            DataKind kind) {
  const std::string given = where.scalar();
  const std::string scenario_dir = std::filesystem::path(scenario_file).parent_path().string();
  std::vector<std::string> candidates;
  try {
    // The first candidate that exists (whatever it is: read_input_file refuses non-regular files
    // with a message naming them); a path the system cannot resolve is an error naming it.
    if (std::string found = find_data_file(given, scenario_dir, kind, what); !found.empty()) return found;
    candidates = data_candidates(given, scenario_dir, kind);
  } catch (const InputError& e) {
    where.fail(e.what());
  }
  const std::vector<std::string> shipped = shipped_names(kind);
  std::string names;
  for (const auto& n : shipped) names += (names.empty() ? "" : ", ") + n;
  where.fail(fmt::format("{} file not found (looked for {}){}{}", what, fmt::join(candidates, ", "),
                         did_you_mean(std::filesystem::path(given).stem().string(), shipped),
                         names.empty() ? "" : fmt::format("; shipped: {}", names)));
}

void check_yaml_nesting(const std::string& text, const std::string& label) {
  int line = 1, flow = 0;
  std::vector<std::size_t> indents;  // block indentation levels open on the current line's path
  std::size_t i = 0;
  auto too_deep = [&](int depth) {
    if (depth > kMaxYamlNesting)
      throw InputError(fmt::format("{}:{}: nested more than {} levels deep; aggsim reads at most {}", label,
                                   line, kMaxYamlNesting, kMaxYamlNesting));
  };
  std::int64_t values = 0;
  auto count = [&] {
    if (++values > kMaxYamlValues)
      throw InputError(fmt::format("{}:{}: more than {} keys, items and values by this line; aggsim reads "
                                   "at most {} from one YAML file",
                                   label, line, kMaxYamlValues, kMaxYamlValues));
  };
  while (i < text.size()) {
    // Start of a line: its indentation, counting each "- " of a compact sequence as one more level.
    std::size_t indent = 0;
    while (i < text.size() &&
           (text[i] == ' ' || (text[i] == '-' && i + 1 < text.size() && text[i + 1] == ' '))) {
      ++indent;
      ++i;
    }
    const bool content = i < text.size() && text[i] != '\n' && text[i] != '#' && text[i] != '\r';
    if (content) count();
    if (content && flow == 0) {
      while (!indents.empty() && indents.back() >= indent) indents.pop_back();
      indents.push_back(indent);
      too_deep(static_cast<int>(indents.size()));
    }
    // The rest of the line: flow brackets outside quotes and comments.
    char quote = 0;
    for (; i < text.size() && text[i] != '\n'; ++i) {
      const char c = text[i];
      if (quote) {
        if (c == quote) quote = 0;
      } else if (c == '"' || c == '\'') {
        quote = c;
      } else if (c == '#' && (i == 0 || text[i - 1] == ' ')) {
        while (i < text.size() && text[i] != '\n') ++i;
        break;
      } else if (c == '[' || c == '{') {
        count();
        too_deep(static_cast<int>(indents.size()) + ++flow);
      } else if (c == ':' || c == ',') {
        count();
      } else if ((c == ']' || c == '}') && flow > 0) {
        --flow;
      }
    }
    if (i < text.size()) ++i;  // the newline
    ++line;
  }
}

namespace {

void emit_value(YAML::Emitter& out, const ParamSpec& spec, const ParamValue& value) {
  if (auto* list = std::get_if<std::vector<std::int64_t>>(&value)) {
    out << YAML::Flow << YAML::BeginSeq;
    for (auto x : *list) out << x;
    out << YAML::EndSeq;
  } else if (auto* files = std::get_if<std::vector<std::string>>(&value); files && files->size() > 1) {
    out << YAML::Flow << YAML::BeginSeq;
    for (const auto& f : *files) out << f;
    out << YAML::EndSeq;
  } else if (auto* rows = std::get_if<NumberRows>(&value)) {
    out << YAML::Flow << YAML::BeginSeq;
    for (const auto& row : *rows) {
      out << YAML::Flow << YAML::BeginSeq;
      for (double x : row) out << fmt::format("{}", x);
      out << YAML::EndSeq;
    }
    out << YAML::EndSeq;
  } else {
    out << format_param(spec, value);
  }
}

}  // namespace

// Dotted keys ("graph.kind") go back into their nested mapping.
void emit_params(YAML::Emitter& out, const std::vector<ParamSpec>& specs, const Params& params) {
  for (const auto& group : group_params(specs)) {
    const std::string prefix = group.prefix.empty() ? "" : group.prefix + ".";
    if (!group.prefix.empty()) out << YAML::Key << group.prefix << YAML::Value << YAML::BeginMap;
    for (const auto& spec : group.specs) {
      if (!params.has(prefix + spec.key)) continue;
      out << YAML::Key << spec.key << YAML::Value;
      emit_value(out, spec, params.all().at(prefix + spec.key));
    }
    if (!group.prefix.empty()) out << YAML::EndMap;
  }
}

namespace {
InputError syntax_error(const std::string& label, const YAML::ParserException& e) {
  // yaml-cpp appends the offending text to a few messages ("unknown escape character: x", "bad YAML
  // version: ..."): the position says where, the text stays out.
  std::string what = e.msg;
  const auto colon = what.find(": ");
  if (colon != std::string::npos) what.erase(colon);
  return InputError(
      fmt::format("{}:{}:{}: syntax error: {}", label, e.mark.line + 1, e.mark.column + 1, what));
}
}  // namespace

namespace {

// Depth-first over the document; a collection reached twice (an alias, even one inside its own
// anchor) is checked once, so aliases can neither loop nor multiply the work.
void check_keys_once(const YAML::Node& node, const std::string& label, const std::string& path,
                     std::set<std::size_t>& visited) {
  if (!node.IsMap() && !node.IsSequence()) return;
  if (!visited.insert(static_cast<std::size_t>(node.Mark().pos)).second) return;
  if (node.IsSequence()) {
    for (std::size_t i = 0; i < node.size(); ++i)
      check_keys_once(node[i], label, fmt::format("{}[{}]", path, i), visited);
    return;
  }
  std::map<std::string, YAML::Mark> first_seen;
  for (auto it = node.begin(); it != node.end(); ++it) {
    if (!it->first.IsScalar()) continue;
    const std::string key = it->first.Scalar();
    const std::string key_path = join_path(path, key);
    const YAML::Mark here = it->first.Mark();
    const auto [first, fresh] = first_seen.emplace(key, here);
    if (!fresh) {
      const YAML::Mark& before = first->second;
      const std::string where = before.line == here.line ? fmt::format("column {}", before.column + 1)
                                                         : fmt::format("line {}", before.line + 1);
      throw InputError(fmt::format("{}:{}:{}: {}: duplicate key (first given at {})", label, here.line + 1,
                                   here.column + 1, key_path, where));
    }
    check_keys_once(it->second, label, key_path, visited);
  }
}

}  // namespace

void check_duplicate_keys(const YAML::Node& root, const std::string& label, const std::string& path) {
  std::set<std::size_t> visited;
  check_keys_once(root, label, path, visited);
}

namespace {

YAML::Node load_yaml(const std::string& text, const std::string& label) {
  try {
    return YAML::Load(text);
  } catch (const YAML::ParserException& e) {
    throw syntax_error(label, e);
  }
}

std::string at_top(const std::string& label, const YAML::Mark& mark) {
  if (mark.is_null()) return fmt::format("{}:1:1", label);
  return fmt::format("{}:{}:{}", label, mark.line + 1, mark.column + 1);
}

void check_schema(const YAML::Node& doc, const std::string& label, const FileSchema& schema) {
  std::string keys;
  for (std::size_t i = 0; i < schema.keys.size() && i < 6; ++i) keys += (i ? ", " : "") + schema.keys[i];
  if (schema.keys.size() > 6) keys += ", ...";
  if (!doc.IsDefined() || doc.IsNull())
    throw InputError(fmt::format("{}: (top level): the {} is empty (expected keys such as {})",
                                 at_top(label, doc.Mark()), schema.what, keys));
  if (!doc.IsMap())
    throw InputError(fmt::format(
        "{}: (top level): not a {}: expected a mapping of keys ({}), found {}; the "
        "file's text is not shown",
        at_top(label, doc.Mark()), schema.what, keys, doc.IsSequence() ? "a list" : "a single value"));
  for (auto it = doc.begin(); it != doc.end(); ++it)
    if (it->first.IsScalar() &&
        std::find(schema.keys.begin(), schema.keys.end(), it->first.Scalar()) != schema.keys.end())
      return;
  const YAML::Mark first = doc.begin() != doc.end() ? doc.begin()->first.Mark() : doc.Mark();
  throw InputError(
      fmt::format("{}: (top level): not a {}: none of its top-level keys is one a {} has ({}); the "
                  "file's text is not shown",
                  at_top(label, first), schema.what, schema.what, keys));
}

}  // namespace

YAML::Node parse_yaml(const std::string& text, const std::string& label) {
  YAML::Node doc = load_yaml(text, label);
  check_duplicate_keys(doc, label);
  return doc;
}

YAML::Node parse_yaml(const std::string& text, const std::string& label, const FileSchema& schema) {
  YAML::Node doc = load_yaml(text, label);
  check_schema(doc, label, schema);
  check_duplicate_keys(doc, label);
  return doc;
}

}  // namespace aggsim
