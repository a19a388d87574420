#include "sim/scenario/calibration.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <sstream>

#include "algorithms/nccl/protocol.hpp"
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

const char* const kClassKeys[] = {"nvlink", "pcie", "network"};
const char* const kProtocolKeys[] = {"ll", "ll128", "simple"};

ProtocolCosts read_nccl(const YamlValue& value, std::vector<std::string>& identified) {
  ProtocolCosts c = ProtocolCosts::nccl_defaults();
  YamlMap map(value);
  if (auto hops = map.get("hop_latency_us")) {
    YamlMap classes(*hops);
    for (int k = 0; k < 3; ++k)
      if (auto per = classes.get(kClassKeys[k])) {
        YamlMap protocols(*per);
        for (int p = 0; p < 3; ++p)
          if (auto v = protocols.get(kProtocolKeys[p]))
            c.hop_latency_s[static_cast<std::size_t>(k)][static_cast<std::size_t>(p)] =
                v->real(0, 1e6) * 1e-6;
        protocols.finish();
      }
    classes.finish();
  }
  if (auto eff = map.get("efficiency")) {
    YamlMap protocols(*eff);
    for (int p = 0; p < 3; ++p)
      if (auto v = protocols.get(kProtocolKeys[p]))
        c.efficiency[static_cast<std::size_t>(p)] = v->real(1e-3, 1);
    protocols.finish();
  }
  if (auto nvls = map.get("nvls_efficiency")) c.nvls_efficiency = nvls->real(1e-3, 2);
  if (auto scale = map.get("base_latency_scale")) {
    const double x = scale->real(0, 1e4);
    for (auto& row : c.base_latency_s)
      for (double& b : row) b *= x;
    c.nvls_hop_latency_s *= x;
  }
  if (auto ids = map.get("identified")) {
    if (!ids->node().IsSequence()) ids->fail("must be a list of parameter names");
    for (std::size_t i = 0; i < ids->node().size(); ++i) identified.push_back(ids->item(i).scalar());
  }
  map.finish();
  return c;
}

void emit_nccl(YAML::Emitter& out, const ProtocolCosts& c, const std::vector<std::string>& identified) {
  const ProtocolCosts d = ProtocolCosts::nccl_defaults();
  out << YAML::Key << "nccl" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "hop_latency_us" << YAML::Value << YAML::BeginMap;
  for (int k = 0; k < 3; ++k) {
    out << YAML::Key << kClassKeys[k] << YAML::Value << YAML::Flow << YAML::BeginMap;
    for (int p = 0; p < 3; ++p)
      out << YAML::Key << kProtocolKeys[p] << YAML::Value
          << fmt::format("{:.6g}",
                         c.hop_latency_s[static_cast<std::size_t>(k)][static_cast<std::size_t>(p)] * 1e6);
    out << YAML::EndMap;
  }
  out << YAML::EndMap;
  out << YAML::Key << "efficiency" << YAML::Value << YAML::Flow << YAML::BeginMap;
  for (int p = 0; p < 3; ++p)
    out << YAML::Key << kProtocolKeys[p] << YAML::Value
        << fmt::format("{:.6g}", c.efficiency[static_cast<std::size_t>(p)]);
  out << YAML::EndMap;
  out << YAML::Key << "nvls_efficiency" << YAML::Value << fmt::format("{:.6g}", c.nvls_efficiency);
  // NCCL's base latencies keep their ratios; one scale is fitted.
  const double scale =
      d.base(NcclAlgorithm::ring, Protocol::simple) > 0
          ? c.base(NcclAlgorithm::ring, Protocol::simple) / d.base(NcclAlgorithm::ring, Protocol::simple)
          : 1;
  out << YAML::Key << "base_latency_scale" << YAML::Value << fmt::format("{:.6g}", scale);
  out << YAML::Key << "identified" << YAML::Value << YAML::Flow << YAML::BeginSeq;
  for (const auto& id : identified) out << id;
  out << YAML::EndSeq << YAML::EndMap;
}

}  // namespace

Calibration load_calibration(const std::string& file, const std::vector<ParamSpec>* generator_specs) {
  const std::string text = read_input_file(file, "calibration");
  check_yaml_nesting(text, file);
  const std::vector<std::string> keys = {"format",  "network", "algorithm", "platform",
                                         "factors", "nccl",    "measured",  "fitted_from"};
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
  if (auto nccl = top.get("nccl")) {
    cal.model = std::make_shared<NcclProtocolParameters>(read_nccl(*nccl, cal.identified));
    cal.model_where = nccl->location();
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

std::string calibration_yaml(const Calibration& cal, const std::string& comment) {
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
  if (const ProtocolCosts* costs = fitted_protocol_costs(cal.model.get())) emit_nccl(out, *costs, cal.identified);
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
  run->model = cal.model;
  if (cal.has_factors())
    run->bandwidth_factor = [cal](bool same_node, double bytes) { return cal.factors(same_node, bytes).bandwidth; };
  return run;
}

}  // namespace aggsim
