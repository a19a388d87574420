#include "sim/scenario/calibration.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <sstream>

#include "algorithms/registry.hpp"
#include "sim/core/error.hpp"
#include "sim/core/input_file.hpp"
#include "sim/platform/platform_spec.hpp"
#include "sim/scenario/yaml_reader.hpp"

namespace aggsim {

const FactorStep& FactorTable::at(double message_bytes) const {
  std::size_t i = 0;
  while (i + 1 < steps.size() && static_cast<double>(steps[i + 1].from_bytes) <= message_bytes) ++i;
  return steps[i];
}

FactorStep Calibration::factors(bool same_node, double bytes) const {
  const FactorTable& t = same_node ? intra : inter;
  return t.empty() ? FactorStep{} : t.at(bytes);
}

namespace {

// The calibration file's `format`, written first; a file without it is format 1.
constexpr int kCalibrationFormat = 1;

FactorTable read_table(const YamlValue& value) {
  if (!value.node().IsSequence()) value.fail("must be a list of {from, latency, bandwidth} steps");
  FactorTable table;
  for (std::size_t i = 0; i < value.node().size(); ++i) {
    YamlMap step(value.item(i));
    FactorStep s;
    auto from = step.require("from");
    s.from_bytes = from.bytes();
    s.latency = step.require("latency").real(1e-9, 1e9);
    s.bandwidth = step.require("bandwidth").real(1e-9, 1e9);
    step.finish();
    if (table.steps.empty() && s.from_bytes != 0) from.fail("the first step must start at 0B");
    if (!table.steps.empty() && s.from_bytes <= table.steps.back().from_bytes)
      from.fail("steps must be in increasing size");
    table.steps.push_back(s);
  }
  if (table.steps.empty()) value.fail("needs at least one step");
  return table;
}

// A model's section of the file, read through YamlMap (keys checked, errors at their line).
class YamlSectionReader : public SectionReader {
 public:
  explicit YamlSectionReader(const YamlValue& value) : map_(value) {}
  std::unique_ptr<SectionReader> map(const std::string& key) override {
    auto v = map_.get(key);
    return v ? std::make_unique<YamlSectionReader>(*v) : nullptr;
  }
  std::optional<double> real(const std::string& key, double low, double high) override {
    auto v = map_.get(key);
    return v ? std::optional<double>(v->real(low, high)) : std::nullopt;
  }
  std::optional<std::vector<std::string>> words(const std::string& key, const std::string& what) override {
    auto v = map_.get(key);
    if (!v) return std::nullopt;
    if (!v->node().IsSequence()) v->fail("must be a list of " + what);
    std::vector<std::string> out;
    for (std::size_t i = 0; i < v->node().size(); ++i) out.push_back(v->item(i).scalar());
    return out;
  }
  void finish() override { map_.finish(); }

 private:
  YamlMap map_;
};

// A model's section written into the file being emitted.
class EmitterSectionWriter : public SectionWriter {
 public:
  explicit EmitterSectionWriter(YAML::Emitter& out) : out_(out) {}
  void begin_map(const std::string& key, bool flow) override {
    out_ << YAML::Key << key << YAML::Value;
    if (flow) out_ << YAML::Flow;
    out_ << YAML::BeginMap;
  }
  void end_map() override { out_ << YAML::EndMap; }
  void number(const std::string& key, double value) override {
    out_ << YAML::Key << key << YAML::Value << fmt::format("{:.6g}", value);
  }
  void words(const std::string& key, const std::vector<std::string>& values) override {
    out_ << YAML::Key << key << YAML::Value << YAML::Flow << YAML::BeginSeq;
    for (const auto& v : values) out_ << v;
    out_ << YAML::EndSeq;
  }

 private:
  YAML::Emitter& out_;
};

}  // namespace

std::vector<const ModelCalibration*> table_models() {
  std::vector<const ModelCalibration*> models;
  for (const AlgorithmInfo& entry : algorithm_table())
    if (entry.calibration.model) models.push_back(&*entry.calibration.model);
  return models;
}

Calibration load_calibration(const std::string& file, const std::vector<ParamSpec>* generator_specs,
                             const std::vector<const ModelCalibration*>& models) {
  const std::string text = read_input_file(file, "calibration");
  check_yaml_nesting(text, file);
  std::vector<std::string> keys = {"format", "network", "algorithm", "platform", "factors"};
  for (const ModelCalibration* model : models) keys.push_back(model->section);
  keys.insert(keys.end(), {"measured", "fitted_from"});
  const YAML::Node doc = parse_yaml(text, file, {"calibration file", keys});
  auto source = std::make_shared<YamlSource>();
  source->file = file;
  YamlMap top(YamlValue(doc, "", source));
  top.expect(keys);
  top.finish();
  // Files written before the key existed are format 1.
  if (auto format = top.get("format")) {
    const std::string version = format->scalar();
    if (version != std::to_string(kCalibrationFormat))
      format->fail(fmt::format(
          "calibration format {} is not one this aggsim reads (it reads format {}); the file comes from "
          "another aggsim version: rerun `aggsim calibrate` with this one on the same measurements to "
          "write a format-{} file",
          version, kCalibrationFormat, kCalibrationFormat));
  }
  Calibration cal;
  cal.file = file;
  auto network = top.require("network");
  cal.network = network.scalar();
  if (cal.network != "lv08" && cal.network != "alpha_beta" && cal.network != "auto")
    network.fail(fmt::format("must be auto | lv08 | alpha_beta (got '{}')", cal.network));
  if (auto algorithm = top.get("algorithm")) {
    cal.algorithm = algorithm->scalar();
    cal.algorithm_where = algorithm->location();
  }
  if (auto platform = top.get("platform")) {
    YamlMap map(*platform);
    if (!generator_specs && platform->node().size() > 0)
      platform->fail("sets platform generator values, but the scenario's platform is an XML file");
    if (generator_specs) {
      for (const auto& spec : *generator_specs) {
        if (auto v = map.get(spec.key)) {
          cal.platform[spec.key] = v->scalar();
          cal.platform_params.set(spec.key, v->param(spec));
        }
      }
    }
    map.finish();
  }
  if (auto factors = top.get("factors")) {
    YamlMap map(*factors);
    if (auto v = map.get("intra")) cal.intra = read_table(*v);
    if (auto v = map.get("inter")) cal.inter = read_table(*v);
    map.finish();
  }
  for (const ModelCalibration* model : models)
    if (auto section = top.get(model->section)) {
      YamlSectionReader reader(*section);
      cal.model = model->read_section(reader, cal.identified);
      cal.model_where = section->location();
    }
  if (auto measured = top.get("measured")) {
    YamlMap map(*measured);
    if (auto v = map.get("min_size")) cal.measured_min_bytes = v->bytes();
    if (auto v = map.get("max_size")) cal.measured_max_bytes = v->bytes();
    if (auto v = map.get("choices")) {
      if (!v->node().IsSequence()) v->fail("must be a list of algorithm/protocol pairs");
      for (std::size_t i = 0; i < v->node().size(); ++i) cal.observed_choices.push_back(v->item(i).scalar());
    }
    if (auto v = map.get("link_classes")) {
      if (!v->node().IsSequence()) v->fail("must be a list of intra | inter");
      for (std::size_t i = 0; i < v->node().size(); ++i) {
        const std::string c = v->item(i).scalar();
        if (c != "intra" && c != "inter")
          v->item(i).fail(fmt::format("must be intra or inter (got '{}')", c));
        cal.link_classes.push_back(c);
      }
      cal.link_classes_where = v->location();
    }
    if (auto v = map.get("fabric")) {
      cal.fabric = v->scalar();
      const std::vector<std::string> fabrics = fabric_names();
      if (std::find(fabrics.begin(), fabrics.end(), cal.fabric) == fabrics.end())
        v->fail(fmt::format("must be {} (got '{}')", fmt::join(fabrics, " | "), cal.fabric));
      cal.fabric_where = v->location();
    }
    map.finish();
  }
  top.get("fitted_from");  // provenance for people
  return cal;
}

std::string calibration_yaml(const Calibration& cal, const std::string& comment,
                             const std::vector<const ModelCalibration*>& models) {
  YAML::Emitter out;
  out << YAML::BeginMap;
  out << YAML::Key << "format" << YAML::Value << kCalibrationFormat;
  out << YAML::Key << "network" << YAML::Value << cal.network;
  if (!cal.algorithm.empty()) out << YAML::Key << "algorithm" << YAML::Value << cal.algorithm;
  if (!cal.platform.empty()) {
    out << YAML::Key << "platform" << YAML::Value << YAML::BeginMap;
    for (const auto& [key, value] : cal.platform) out << YAML::Key << key << YAML::Value << value;
    out << YAML::EndMap;
  }
  out << YAML::Key << "factors" << YAML::Value << YAML::BeginMap;
  for (const auto& [name, table] : {std::pair{"intra", &cal.intra}, std::pair{"inter", &cal.inter}}) {
    if (table->empty()) continue;
    out << YAML::Key << name << YAML::Value << YAML::BeginSeq;
    for (const auto& s : table->steps)
      out << YAML::Flow << YAML::BeginMap << YAML::Key << "from" << YAML::Value
          << fmt::format("{}B", s.from_bytes) << YAML::Key << "latency" << YAML::Value
          << fmt::format("{:.6g}", s.latency) << YAML::Key << "bandwidth" << YAML::Value
          << fmt::format("{:.6g}", s.bandwidth) << YAML::EndMap;
    out << YAML::EndSeq;
  }
  out << YAML::EndMap;
  if (cal.model) {
    EmitterSectionWriter section(out);
    for (const ModelCalibration* model : models)
      if (model->write_section(section, *cal.model, cal.identified)) break;
  }
  if (cal.measured_max_bytes > 0) {
    out << YAML::Key << "measured" << YAML::Value << YAML::BeginMap;
    out << YAML::Key << "min_size" << YAML::Value << fmt::format("{}B", cal.measured_min_bytes);
    out << YAML::Key << "max_size" << YAML::Value << fmt::format("{}B", cal.measured_max_bytes);
    if (!cal.observed_choices.empty()) {
      out << YAML::Key << "choices" << YAML::Value << YAML::Flow << YAML::BeginSeq;
      for (const auto& c : cal.observed_choices) out << c;
      out << YAML::EndSeq;
    }
    if (!cal.link_classes.empty()) {
      out << YAML::Key << "link_classes" << YAML::Value << YAML::Flow << YAML::BeginSeq;
      for (const auto& c : cal.link_classes) out << c;
      out << YAML::EndSeq;
    }
    if (!cal.fabric.empty()) out << YAML::Key << "fabric" << YAML::Value << cal.fabric;
    out << YAML::EndMap;
  }
  out << YAML::EndMap;
  std::string text;
  std::istringstream lines(comment);
  for (std::string l; std::getline(lines, l);) text += "# " + l + "\n";
  return text + out.c_str() + "\n";
}

std::shared_ptr<const RunCalibration> run_calibration(const Calibration& cal) {
  auto run = std::make_shared<RunCalibration>();
  run->file = cal.file;
  run->model = cal.model;
  if (cal.has_factors()) {
    run->link_factors = [intra = cal.intra, inter = cal.inter](bool same_node, double bytes) {
      const FactorTable& t = same_node ? intra : inter;
      const FactorStep f = t.empty() ? FactorStep{} : t.at(bytes);
      return LinkFactors{f.latency, f.bandwidth};
    };
    run->bandwidth_factor = [factors = run->link_factors](bool same_node, double bytes) {
      return factors(same_node, bytes).bandwidth;
    };
  }
  run->measured_min_bytes = cal.measured_min_bytes;
  run->measured_max_bytes = cal.measured_max_bytes;
  run->observed_choices = cal.observed_choices;
  run->link_classes = cal.link_classes;
  run->link_classes_where = cal.link_classes_where;
  run->fabric = cal.fabric;
  run->fabric_where = cal.fabric_where;
  return run;
}

}  // namespace aggsim
