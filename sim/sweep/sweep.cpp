// Sweep expansion: grid axes (one per key) and zip axes (one per group of equal-length lists) form
// a mixed-radix counter, first axis outermost; each point is the base scenario plus one override
// per swept key, checked by the ordinary scenario loader.
#include "sim/sweep/sweep.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "algorithms/registry.hpp"
#include "sim/core/error.hpp"
#include "sim/core/input_file.hpp"
#include "sim/core/random.hpp"
#include "sim/core/strings.hpp"
#include "sim/scenario/scenario_loader.hpp"
#include "sim/scenario/yaml_reader.hpp"

namespace aggsim {

namespace {

namespace fs = std::filesystem;

struct SweepValue {
  std::string text;      // flow-style YAML
  std::string location;  // file:line:col
};

// One axis of the product: several keys varied together (one key for a grid axis).
struct Axis {
  std::vector<std::string> keys;
  std::vector<std::vector<SweepValue>> rows;  // rows[i][k]: value of keys[k] at position i
};

std::string flow_text(const YAML::Node& node) {
  YAML::Emitter out;
  out << YAML::Flow << node;
  return out.c_str();
}

std::vector<SweepValue> read_list(const YamlValue& value) {
  if (!value.node().IsSequence()) value.fail("expected a list of values, e.g. [8, 16]");
  if (value.node().size() == 0) value.fail("must not be an empty list");
  std::vector<SweepValue> out;
  for (std::size_t i = 0; i < value.node().size(); ++i) {
    const YamlValue item = value.item(i);
    if (!item.node().IsDefined() || item.node().IsNull()) item.fail("a swept value must not be empty");
    out.push_back({flow_text(item.node()), item.location()});
  }
  return out;
}

// Keys of a mapping in document order, each checked to be a usable key path.
std::vector<std::pair<std::string, YamlValue>> entries(const YamlValue& map) {
  std::vector<std::pair<std::string, YamlValue>> out;
  for (auto it = map.node().begin(); it != map.node().end(); ++it) {
    const std::string key = it->first.Scalar();
    const YamlValue value(it->second, map.path() + "." + key, map.source());
    if (key.empty() || key.front() == '.' || key.back() == '.' || key.find("..") != std::string::npos)
      YamlValue(it->first, value.path(), map.source())
          .fail("a swept key must be a key path such as algorithm.name");
    out.emplace_back(key, value);
  }
  return out;
}

void read_zip_group(const YamlValue& group, std::vector<Axis>& axes) {
  YamlMap checked(group);  // fails unless a mapping
  Axis axis;
  std::string first_key;
  for (const auto& [key, value] : entries(group)) {
    auto values = read_list(value);
    if (axis.keys.empty()) {
      axis.rows.resize(values.size());
      first_key = key;
    } else if (values.size() != axis.rows.size()) {
      value.fail(
          fmt::format("has {} values but '{}' has {}: the lists of a zip group must have equal lengths",
                      values.size(), first_key, axis.rows.size()));
    }
    axis.keys.push_back(key);
    for (std::size_t i = 0; i < values.size(); ++i) axis.rows[i].push_back(values[i]);
  }
  if (axis.keys.empty()) group.fail("a zip group needs at least one key with a list of values");
  axes.push_back(std::move(axis));
}

struct SweepBlock {
  std::string name;
  std::string out;
  std::vector<Axis> axes;
  int repeat = 1;
  std::uint64_t base_seed = 1;
};

// One grid axis from `--grid key=v1,v2`.
Axis command_line_axis(const std::string& spec) {
  const auto eq = spec.find('=');
  const std::string where = "--grid " + spec;
  if (eq == std::string::npos || eq == 0) throw InputError(where + ": expected key.path=value1,value2,...");
  Axis axis;
  axis.keys = {spec.substr(0, eq)};
  const std::string& key = axis.keys[0];
  if (key.front() == '.' || key.back() == '.' || key.find("..") != std::string::npos)
    throw InputError(where + ": a swept key must be a key path such as algorithm.name");
  for (const std::string& value : split_flow_list(spec.substr(eq + 1))) {
    if (value.empty()) throw InputError(where + ": empty value (values are separated by commas)");
    YAML::Node node;
    try {
      node = YAML::Load(value);
    } catch (const YAML::Exception& e) {
      throw InputError(fmt::format("{}: value '{}' is not valid YAML: {}", where, value, e.msg));
    }
    check_duplicate_keys(node, where, key);
    axis.rows.push_back({{flow_text(node), where}});
  }
  return axis;
}

SweepBlock read_block(const std::string& text, const std::string& label, const SweepExtras& extras) {
  std::vector<std::string> file_keys = scenario_top_level_keys();
  file_keys.push_back("sweep");
  YAML::Node doc = parse_yaml(text, label, {"sweep file", file_keys});
  auto source = std::make_shared<YamlSource>();
  source->file = label;
  const YamlValue top(doc, "", source);
  const bool from_command_line = !extras.grid.empty() || extras.repeat > 0;
  if (!doc["sweep"] && !from_command_line)
    top.fail(
        "no 'sweep:' block (a sweep file is a scenario plus sweep: {grid: ..., zip: ...}; or give "
        "the axes on the command line: --grid key=v1,v2 [--repeat N])");

  SweepBlock block;
  block.name = doc["name"] && doc["name"].IsScalar() ? doc["name"].Scalar() : fs::path(label).stem().string();
  if (doc["seed"] && doc["seed"].IsScalar()) {
    try {
      block.base_seed = doc["seed"].as<std::uint64_t>();
    } catch (const YAML::Exception&) {
      // the loader reports a bad seed with its location when the points are checked
    }
  }
  for (const auto& spec : extras.grid) block.axes.push_back(command_line_axis(spec));
  if (!doc["sweep"]) {
    block.repeat = std::max(1, extras.repeat);
    if (block.axes.empty() && block.repeat == 1)
      throw InputError(label + ": --repeat 1 and no --grid: nothing to sweep");
    return block;
  }
  YamlMap sweep(top.child("sweep"));
  std::vector<std::string> sweep_keys;
  for (const auto& spec : sweep_param_specs()) sweep_keys.push_back(spec.key);
  sweep.expect(sweep_keys);
  const auto spec_of = [](const std::string& key) {
    for (const auto& spec : sweep_param_specs())
      if (spec.key == key) return spec;
    throw std::logic_error("sweep: no spec for " + key);
  };
  if (auto v = sweep.get("out")) block.out = std::get<std::string>(v->param(spec_of("out")));
  if (auto v = sweep.get("repeat"))
    block.repeat = static_cast<int>(std::get<std::int64_t>(v->param(spec_of("repeat"))));
  if (extras.repeat > 0) block.repeat = extras.repeat;
  if (auto grid = sweep.get("grid")) {
    YamlMap checked(*grid);
    for (const auto& [key, value] : entries(*grid)) {
      Axis axis;
      axis.keys = {key};
      for (auto& v : read_list(value)) axis.rows.push_back({v});
      block.axes.push_back(std::move(axis));
    }
  }
  if (auto zip = sweep.get("zip")) {
    if (zip->node().IsSequence()) {
      for (std::size_t i = 0; i < zip->node().size(); ++i) read_zip_group(zip->item(i), block.axes);
    } else {
      read_zip_group(*zip, block.axes);
    }
  }
  sweep.finish();
  if (block.axes.empty() && block.repeat == 1)
    sweep.value().fail("needs 'grid:' and/or 'zip:' with at least one swept key, or 'repeat:'");

  std::map<std::string, std::string> seen;
  for (const auto& axis : block.axes)
    for (const auto& key : axis.keys)
      if (!seen.emplace(key, key).second)
        sweep.value().fail(fmt::format(
            "key '{}' is swept twice (in grid and zip, in two zip groups, or also by --grid)", key));
  if (block.repeat > 1 && seen.count("seed"))
    sweep.value().fail(
        "'seed' is swept and 'repeat' is set: repetitions take their seeds from the base "
        "seed, so use one or the other");
  return block;
}

std::string read_text(const std::string& file) {
  std::string text = read_input_file(file, "sweep");
  check_yaml_nesting(text, file);
  return text;
}

// Loader messages name an override as "--set key=value"; in a sweep, the value's place in the file is
// clearer.
std::string locate_overrides(std::string message, const std::vector<std::string>& overrides,
                             const std::vector<const SweepValue*>& values) {
  for (std::size_t i = 0; i < overrides.size(); ++i) {
    const std::string from = "--set " + overrides[i];
    const std::string to = fmt::format("{} (swept value {})", values[i]->location, overrides[i]);
    for (auto pos = message.find(from); pos != std::string::npos; pos = message.find(from, pos + to.size()))
      message.replace(pos, from.size(), to);
  }
  return message;
}

Sweep header_of(const SweepBlock& block, const std::string& label) {
  std::map<std::string, int> seen;
  for (const auto& axis : block.axes)
    for (const auto& key : axis.keys) {
      if (++seen[key] > 1)
        throw InputError(fmt::format(
            "{}: key '{}' is swept twice (in the file and by --grid, or twice by --grid)", label, key));
      if (key == "seed" && block.repeat > 1)
        throw InputError(
            fmt::format("{}: 'seed' is swept and repetitions are asked for: repetitions take "
                        "their seeds from the base seed, so use one or the other",
                        label));
    }
  // The points are the axes' product: counted with overflow checks before any is made.
  std::uint64_t points = static_cast<std::uint64_t>(block.repeat);
  bool overflow = false;
  std::string lengths;
  for (const auto& axis : block.axes) {
    overflow = overflow || __builtin_mul_overflow(points, axis.rows.size(), &points);
    lengths += fmt::format("{}{}", lengths.empty() ? "" : " x ", axis.rows.size());
  }
  if (block.repeat > 1) lengths += fmt::format("{}{} repetitions", lengths.empty() ? "" : " x ", block.repeat);
  if (overflow || points > kMaxSweepPoints)
    throw InputError(fmt::format("{}: the sweep has {} points ({}), more than the {} aggsim expands in one "
                                 "sweep: sweep fewer values, or split it into several sweeps",
                                 label, overflow ? std::string("2^64 or more") : std::to_string(points), lengths,
                                 kMaxSweepPoints));
  Sweep sweep;
  sweep.file = label;
  sweep.name = block.name;
  sweep.default_out = block.out.empty() ? "out/" + block.name : block.out;
  for (const auto& axis : block.axes) sweep.keys.insert(sweep.keys.end(), axis.keys.begin(), axis.keys.end());
  sweep.repeat = block.repeat;
  sweep.planned_points = points;
  return sweep;
}

// A --set key is one value for every point: the same key (or a key inside it, or around it) swept
// too would be overridden at some points and not at others.
void check_sets(const std::vector<std::string>& sets, const std::vector<std::string>& swept) {
  const auto within = [](const std::string& inner, const std::string& outer) {
    return inner == outer || inner.rfind(outer + ".", 0) == 0;
  };
  for (const auto& set : sets) {
    const std::string key = set.substr(0, set.find('='));
    for (const auto& s : swept)
      if (within(key, s) || within(s, key))
        throw InputError(
            fmt::format("--set {}: '{}' is swept: give it one value (--set) or several (the sweep), "
                        "not both",
                        set, s));
  }
}

}  // namespace

double point_cost(const Scenario& sc) {
  return static_cast<double>(sc.ranks) * sc.steps * sc.algorithm.entry->messages_per_rank_step(sc.ranks);
}

std::string point_id(const std::string& resolved_yaml) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : resolved_yaml) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return fmt::format("{:016x}", h).substr(0, 12);
}

std::string describe_point(const Sweep& sweep, const SweepPoint& point) {
  std::string out;
  for (std::size_t k = 0; k < sweep.keys.size() && k < point.values.size(); ++k)
    out += fmt::format("{}{}={}", out.empty() ? "" : ", ", sweep.keys[k], point.values[k]);
  if (sweep.repeat > 1) out += fmt::format("{}repeat {}", out.empty() ? "" : ", ", point.repeat);
  return out;
}

std::vector<ParamSpec> sweep_param_specs() {
  return {
      ParamSpec("grid", ParamKind::text, "",
                "key path: [values] per axis; the points are their cartesian product, first key outermost")
          .shown_as("mapping of lists"),
      ParamSpec("zip", ParamKind::text, "",
                "key path: [values] varied together (equal lengths), one axis; or a list of such groups")
          .shown_as("mapping of lists"),
      ParamSpec("repeat", ParamKind::integer, "1",
                "runs per combination of swept values, each with a seed derived from `seed`")
          .between(1, 100000),
      ParamSpec("out", ParamKind::text, "", "the sweep's output folder (default out/<name>)"),
  };
}

std::uint64_t repetition_seed(std::uint64_t base, int r) {
  if (r == 0) return base;
  // Kept below 2^53 so the seed survives any JSON reader as an exact number.
  return splitmix64(splitmix64(base) ^ (0x5265706561745eedULL + static_cast<std::uint64_t>(r))) >> 11;
}

Sweep read_sweep_header(const std::string& file, const SweepExtras& extras) {
  return read_sweep_header_text(read_text(file), file, extras);
}

Sweep read_sweep_header_text(const std::string& text, const std::string& label, const SweepExtras& extras) {
  return header_of(read_block(text, label, extras), label);
}

Sweep expand_sweep(const std::string& file, const SweepExtras& extras) {
  return expand_sweep_text(read_text(file), file, extras);
}

Sweep expand_sweep_text(const std::string& text, const std::string& label, const SweepExtras& extras) {
  const SweepBlock block = read_block(text, label, extras);
  Sweep sweep = header_of(block, label);
  check_sets(extras.sets, sweep.keys);
  const auto total = static_cast<std::size_t>(sweep.planned_points);  // counted and bounded by header_of

  std::map<std::string, int> index_of_id;
  std::vector<std::size_t> digit(block.axes.size(), 0);
  int repetition = 0;
  for (std::size_t n = 0; n < total; ++n) {
    SweepPoint point;
    point.index = static_cast<int>(n);
    point.repeat = repetition;
    std::vector<const SweepValue*> values;
    for (std::size_t a = 0; a < block.axes.size(); ++a) {
      const Axis& axis = block.axes[a];
      for (std::size_t k = 0; k < axis.keys.size(); ++k) {
        const SweepValue& v = axis.rows[digit[a]][k];
        values.push_back(&v);
        point.values.push_back(v.text);
        point.overrides.push_back(axis.keys[k] + "=" + v.text);
      }
    }
    std::vector<std::string> overrides = extras.sets;
    overrides.insert(overrides.end(), point.overrides.begin(), point.overrides.end());
    if (block.repeat > 1)
      overrides.push_back(fmt::format("seed={}", repetition_seed(block.base_seed, repetition)));
    try {
      const Scenario scenario = load_sweep_point_text(text, label, overrides);
      point.resolved = resolved_yaml(scenario);
      point.cost = point_cost(scenario);
      std::string values_text;
      for (const auto& o : point.overrides) values_text += (values_text.empty() ? "" : ", ") + o;
      if (repetition == 0)
        for (const auto& dropped : scenario.dropped_keys)
          sweep.notes.push_back(fmt::format("sweep point {} of {} ({}): {}", n + 1, total, values_text,
                                            describe_dropped_key(dropped)));
    } catch (const InputError& e) {
      throw InputError(
          locate_overrides(e.what(), point.overrides, values),
          {fmt::format("in sweep point {} of {} ({})", n + 1, total, describe_point(sweep, point))});
    }
    point.id = point_id(point.resolved);
    const auto [it, fresh] = index_of_id.emplace(point.id, point.index);
    if (!fresh) {
      const SweepPoint& other = sweep.points[static_cast<std::size_t>(it->second)];
      // At the first swept value where the two points differ: the one that has no effect.
      std::string where = fmt::format("{}:1:1", label), key = "sweep";
      for (std::size_t k = 0; k < values.size() && k < other.values.size(); ++k)
        if (point.values[k] != other.values[k]) {
          where = values[k]->location;
          key = sweep.keys[k];
          break;
        }
      throw InputError(fmt::format(
          "{}: {}: sweep points {} ({}) and {} ({}) are the same scenario: a swept value has no "
          "effect or two values mean the same",
          where, key, other.index + 1, describe_point(sweep, other), n + 1, describe_point(sweep, point)));
    }
    sweep.points.push_back(std::move(point));
    // Advance the counter: repetitions fastest, then the last axis.
    if (++repetition < block.repeat) continue;
    repetition = 0;
    for (std::size_t a = block.axes.size(); a-- > 0;) {
      if (++digit[a] < block.axes[a].rows.size()) break;
      digit[a] = 0;
    }
  }
  return sweep;
}

}  // namespace aggsim
