#include "sim/scenario/calibration.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <sstream>

#include "sim/core/error.hpp"
#include "sim/core/input_file.hpp"
#include "sim/scenario/yaml_reader.hpp"

namespace aggsim {

const FactorStep& FactorTable::at(double message_bytes) const {
  std::size_t i = 0;
  while (i + 1 < steps.size() && static_cast<double>(steps[i + 1].from_bytes) <= message_bytes) ++i;
  return steps[i];
}

namespace {

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

}  // namespace

Calibration load_calibration(const std::string& file, const std::vector<ParamSpec>* generator_specs) {
  const std::string text = read_input_file(file, "calibration");
  check_yaml_nesting(text, file);
  const std::vector<std::string> keys = {"network", "platform", "factors", "fitted_from"};
  const YAML::Node doc = parse_yaml(text, file, {"calibration file", keys});
  auto source = std::make_shared<YamlSource>();
  source->file = file;
  YamlMap top(YamlValue(doc, "", source));
  top.expect(keys);
  top.finish();
  Calibration cal;
  cal.file = file;
  auto network = top.require("network");
  cal.network = network.scalar();
  if (cal.network != "lv08" && cal.network != "alpha_beta" && cal.network != "auto")
    network.fail(fmt::format("must be auto | lv08 | alpha_beta (got '{}')", cal.network));
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
  top.get("fitted_from");  // provenance for people
  return cal;
}

std::string calibration_yaml(const Calibration& cal, const std::string& comment) {
  YAML::Emitter out;
  out << YAML::BeginMap;
  out << YAML::Key << "network" << YAML::Value << cal.network;
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
  out << YAML::EndMap << YAML::EndMap;
  std::string text;
  std::istringstream lines(comment);
  for (std::string l; std::getline(lines, l);) text += "# " + l + "\n";
  return text + out.c_str() + "\n";
}

}  // namespace aggsim
