#include "sim/scenario/workload_loader.hpp"

#include <fmt/format.h>

#include "sim/core/error.hpp"
#include "sim/core/units.hpp"
#include "sim/workload/problem.hpp"

namespace aggsim {

const char* granularity_name(Granularity g) {
  return g == Granularity::layer ? "layer" : "model";
}
const char* apply_to_name(ApplyTo a) {
  return a == ApplyTo::gradients ? "gradients" : "weights";
}

namespace {

// One entry of a layer table: {name, shape: [rows, cols], params?, forward_flops, backward_flops?}.
LayerSpec read_layer(const YamlValue& v) {
  YamlMap m(v);
  LayerSpec l;
  l.name = m.require("name").scalar();
  const YamlValue shape = m.require("shape");
  if (!shape.node().IsSequence() || (shape.node().size() != 1 && shape.node().size() != 2))
    shape.fail("expected [rows, cols] or [elements]");
  l.rows = shape.item(0).integer(1, 1e12);
  l.cols = shape.node().size() == 2 ? shape.item(1).integer(1, 1e12) : 1;
  l.params = l.rows * l.cols;
  if (auto p = m.get("params")) {
    l.params = p->integer(1, 1e13);
    if (l.params < l.rows * l.cols) p->fail("must count at least the rows x cols of the weight matrix");
  }
  l.forward_flops = m.require("forward_flops").real(0, 1e18);
  l.backward_flops = 2 * l.forward_flops;
  if (auto b = m.get("backward_flops")) l.backward_flops = b->real(0, 1e18);
  m.finish();
  return l;
}

void read_layer_table(const std::string& file, ModelSpec& spec) {
  YAML::Node doc;
  try {
    doc = YAML::LoadFile(file);
  } catch (const YAML::ParserException& e) {
    throw InputError(
        fmt::format("{}:{}:{}: syntax error: {}", file, e.mark.line + 1, e.mark.column + 1, e.msg));
  }
  auto source = std::make_shared<YamlSource>();
  source->file = file;
  YamlMap top(YamlValue(doc, "", source));
  spec.network_name = top.require("name").scalar();
  top.get("source");       // citations, for people
  top.get("description");  // free text
  const YamlValue layers = top.require("layers");
  if (!layers.node().IsSequence() || layers.node().size() == 0)
    layers.fail("expected a non-empty list of layers");
  spec.layers.clear();
  std::uint64_t elements = 0;
  for (std::size_t i = 0; i < layers.node().size(); ++i) {
    spec.layers.push_back(read_layer(layers.item(i)));
    elements += static_cast<std::uint64_t>(spec.layers.back().params);
  }
  top.finish();
  spec.size_bytes = elements * kFloatBytes;
}

SpeedFactors read_speed_factors(const YamlValue& v, int ranks) {
  SpeedFactors s;
  if (v.node().IsSequence()) {
    const std::size_t n = v.node().size();
    if (n != 1 && n != static_cast<std::size_t>(ranks))
      v.fail(fmt::format("expected one factor for all ranks or one per rank ({}), found {}", ranks, n));
    for (std::size_t i = 0; i < n; ++i) s.list.push_back(v.item(i).real(1e-9, 1e9));
    return s;
  }
  YamlMap rule(v);
  const YamlValue slow = rule.require("slow_ranks");
  s.slow_ranks = std::get<std::vector<std::int64_t>>(
      slow.param(ParamSpec("slow_ranks", ParamKind::integer_list).between(0, ranks - 1)));
  s.slow_factor = rule.require("factor").real(1e-9, 1e9);
  rule.finish();
  return s;
}

}  // namespace

void read_model_layers(YamlMap& model, ModelSpec& spec, const std::string& scenario_file) {
  auto layers = model.get("layers");
  auto batch = model.get("batch");
  if (batch) spec.batch = batch->integer(1, 1e9);
  if (!layers) {
    if (batch) batch->fail("only used with 'layers' (FLOPs are per sample)");
    return;
  }
  if (auto size = model.get("size")) size->fail("the layer table sets the size; give one or the other");
  spec.layers_file = find_input_file(*layers, "layer table", scenario_file);
  read_layer_table(spec.layers_file, spec);
}

void read_aggregation_scope(YamlMap& alg, AlgorithmSpec& spec, bool consensus) {
  if (auto v = alg.get("granularity")) {
    const std::string g = v->scalar();
    if (g == "layer")
      spec.granularity = Granularity::layer;
    else if (g == "model")
      spec.granularity = Granularity::model;
    else
      v->fail(fmt::format("must be layer | model (got '{}')", g));
  }
  if (auto v = alg.get("bucket")) spec.bucket_bytes = v->bytes();
  spec.apply_to = consensus ? ApplyTo::gradients : ApplyTo::weights;
  if (auto v = alg.get("apply_to")) {
    const std::string a = v->scalar();
    if (a == "gradients")
      spec.apply_to = ApplyTo::gradients;
    else if (a == "weights")
      spec.apply_to = ApplyTo::weights;
    else
      v->fail(fmt::format("must be gradients | weights (got '{}')", a));
  }
}

void read_training(YamlMap& top, Scenario& sc) {
  if (auto w = top.get("workload")) {
    YamlMap map(*w);
    sc.workload.enabled = true;
    sc.workload.params = map.params(workload_param_specs());
    map.finish();
    if (!sc.model.math) w->fail("a training workload needs model.math: on");
    const std::int64_t dim = problem_parameter_count(workload_options(sc.workload.params));
    const YAML::Node given = top.value().node()["model"];
    if (given && given.IsMap() && given["proxy_dim"] && sc.model.proxy_dim != dim)
      top.value()
          .child("model")
          .child("proxy_dim")
          .fail(fmt::format("the workload's problem has {} parameters; leave proxy_dim out", dim));
    sc.model.proxy_dim = dim;
  }
  sc.compute.straggler = default_params(straggler_param_specs());
  if (auto c = top.get("compute")) {
    YamlMap map(*c);
    if (auto s = map.get("speed_factors")) sc.compute.speed = read_speed_factors(*s, sc.ranks);
    if (auto s = map.get("straggler")) {
      YamlMap straggler(*s);
      sc.compute.straggler = straggler.params(straggler_param_specs());
      straggler.finish();
    }
    map.finish();
  }
}

void emit_model_layers(YAML::Emitter& out, const ModelSpec& spec) {
  if (spec.layers_file.empty()) return;
  out << YAML::Key << "layers" << YAML::Value << spec.layers_file;
  out << YAML::Key << "batch" << YAML::Value << spec.batch;
}

void emit_aggregation_scope(YAML::Emitter& out, const AlgorithmSpec& spec) {
  out << YAML::Key << "granularity" << YAML::Value << granularity_name(spec.granularity);
  out << YAML::Key << "bucket" << YAML::Value << fmt::format("{}B", spec.bucket_bytes);
  out << YAML::Key << "apply_to" << YAML::Value << apply_to_name(spec.apply_to);
}

void emit_training(YAML::Emitter& out, const Scenario& sc) {
  if (sc.workload.enabled) {
    out << YAML::Key << "workload" << YAML::Value << YAML::BeginMap;
    emit_params(out, workload_param_specs(), sc.workload.params);
    out << YAML::EndMap;
  }
  out << YAML::Key << "compute" << YAML::Value << YAML::BeginMap;
  const SpeedFactors& s = sc.compute.speed;
  if (!s.list.empty()) {
    out << YAML::Key << "speed_factors" << YAML::Value << YAML::Flow << YAML::BeginSeq;
    for (double f : s.list) out << fmt::format("{}", f);
    out << YAML::EndSeq;
  } else if (!s.slow_ranks.empty()) {
    out << YAML::Key << "speed_factors" << YAML::Value << YAML::Flow << YAML::BeginMap;
    out << YAML::Key << "slow_ranks" << YAML::Value << YAML::Flow << YAML::BeginSeq;
    for (auto r : s.slow_ranks) out << r;
    out << YAML::EndSeq;
    out << YAML::Key << "factor" << YAML::Value << fmt::format("{}", s.slow_factor);
    out << YAML::EndMap;
  }
  out << YAML::Key << "straggler" << YAML::Value << YAML::BeginMap;
  emit_params(out, straggler_param_specs(), sc.compute.straggler);
  out << YAML::EndMap;
  out << YAML::EndMap;
}

}  // namespace aggsim
