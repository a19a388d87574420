#include "sim/scenario/workload_loader.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <limits>
#include <vector>

#include "sim/core/checked.hpp"
#include "sim/core/error.hpp"
#include "sim/core/input_file.hpp"
#include "sim/core/units.hpp"
#include "sim/metrics/step_log.hpp"
#include "sim/scenario/scenario_keys.hpp"
#include "sim/workload/problem.hpp"

namespace aggsim {

const char* granularity_name(Granularity g) {
  return g == Granularity::layer ? "layer" : "model";
}
const char* apply_to_name(ApplyTo a) {
  return a == ApplyTo::gradients ? "gradients" : "weights";
}

namespace {

// custom_avg divides fp32 sums by the denominator (NCCL's variant multiplies by its float inverse):
// 1e-45 made them inf and NaN, 1e308 became an infinite float. Within [1e-6, 1e12] both the
// quotient of any gradient sum a run makes and the inverse stay ordinary floats.
constexpr double kMinDenominator = 1e-6;
constexpr double kMaxDenominator = 1e12;

// Parameters of a whole model: 4 bytes each must stay below 2^63 bytes.
constexpr std::int64_t kMaxModelElements =
    std::numeric_limits<std::int64_t>::max() / static_cast<std::int64_t>(kFloatBytes);

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
  // The weight matrix's bytes must fit in the signed 64-bit sizes the simulator counts with.
  const auto elements = checked_mul(l.rows, l.cols);
  if (!elements || *elements > kMaxModelElements)
    shape.fail(
        fmt::format("{} x {} parameters do not fit: a model holds at most {} parameters ({} bytes in fp32, "
                    "below 2^63)",
                    l.rows, l.cols, kMaxModelElements, kMaxModelElements * kFloatBytes));
  l.params = *elements;
  if (auto p = m.get("params")) {
    l.params = p->integer(1, static_cast<double>(kMaxModelElements));
    if (l.params < *elements) p->fail("must count at least the rows x cols of the weight matrix");
  }
  l.forward_flops = m.require("forward_flops").real(0, 1e18);
  l.backward_flops = 2 * l.forward_flops;
  if (auto b = m.get("backward_flops")) l.backward_flops = b->real(0, 1e18);
  m.finish();
  return l;
}

void read_layer_table(const std::string& file, ModelSpec& spec) {
  const std::string text = read_input_file(file, "layer table");
  check_yaml_nesting(text, file);
  YAML::Node doc = parse_yaml(text, file, {"layer table", {"name", "layers", "source", "description"}});
  auto source = std::make_shared<YamlSource>();
  source->file = file;
  YamlMap top(YamlValue(doc, "", source));
  spec.network_name = top.require("name").scalar();
  top.get("source");       // citations, for people
  top.get("description");  // free text
  const YamlValue layers = top.require("layers");
  if (!layers.node().IsSequence() || layers.node().size() == 0)
    layers.fail("expected a non-empty list of layers");
  if (layers.node().size() > static_cast<std::size_t>(kMaxLayers))
    layers.fail(fmt::format("{} layers: aggsim reads at most {} (each is timed, bucketed and aggregated step "
                            "by step; merge small tensors into one row)",
                            layers.node().size(), kMaxLayers));
  spec.layers.clear();
  std::int64_t elements = 0;
  for (std::size_t i = 0; i < layers.node().size(); ++i) {
    spec.layers.push_back(read_layer(layers.item(i)));
    const auto sum = checked_add(elements, spec.layers.back().params);
    if (!sum || *sum > kMaxModelElements)
      layers.item(i).fail(
          fmt::format("the layers up to this one hold more than {} parameters ({} bytes in fp32, "
                      "the most a 64-bit size can count)",
                      kMaxModelElements, kMaxModelElements * kFloatBytes));
    elements = *sum;
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

// `host`, 0 (free) or a rate in SimGrid's bandwidth units ("200GBps", "1.6Tbps").
ReduceSpeed read_reduce_speed(const YamlValue& v) {
  const std::string text = v.scalar();
  if (text == "host") return {};
  ReduceSpeed r;
  r.from_host = false;
  try {
    r.bytes_per_s = units::parse_bandwidth(text);
  } catch (const std::invalid_argument& e) {
    v.fail(
        fmt::format("must be host, 0 (free) or a rate in bytes per second such as 200GBps ({})", e.what()));
  }
  if (r.bytes_per_s > 0 && r.bytes_per_s < units::kMinBandwidth)
    v.fail(fmt::format(
        "must be host, 0 (free) or at least 1Bps, the slowest reduction aggsim simulates: below it a step "
        "can outlast the simulated clock (a reduction at 1e-300 B/s never ends) (got {} B/s)",
        r.bytes_per_s));
  return r;
}

}  // namespace

std::vector<ParamSpec> model_param_specs() {
  return {
      ParamSpec("size", ParamKind::bytes, "100MB",
                "dense fp32 gradient each rank aggregates (not with layers)"),
      ParamSpec("layers", ParamKind::text, "",
                "layer table file (name, layers: [{name, shape, forward_flops}]): sets the size and the "
                "compute per sample (e.g. scenarios/models/resnet50.yaml)"),
      ParamSpec("batch", ParamKind::integer, "32",
                "samples per rank per step, with layers (FLOPs are per sample)")
          .between(1, 1e9),
      ParamSpec("proxy_dim", ParamKind::integer, "4096", "real numbers each rank reduces on the math plane")
          .between(1, 1e9),
      ParamSpec("math", ParamKind::boolean, "true", "reduce real numbers (off: timing only)"),
  };
}

std::vector<ParamSpec> common_algorithm_param_specs() {
  return {
      ParamSpec("op", ParamKind::choice, "avg",
                "reduction: avg divides the sum by the number reduced, custom_avg by denominator")
          .one_of(reduce_kind_names()),
      ParamSpec("denominator", ParamKind::real, "",
                "custom_avg's divisor (needed with op: custom_avg only), from 1e-6 to 1e12: fp32 gradients are "
                "divided by it, and beyond these bounds the quotient can leave the finite floats")
          .between(kMinDenominator, kMaxDenominator),
      ParamSpec("granularity", ParamKind::choice, granularity_name(Granularity::model),
                "model: one collective after the backward pass; layer: one per bucket of layers, in order, "
                "overlapping the backward pass (overlap: false: one per tensor, after it)")
          .one_of({granularity_name(Granularity::layer), granularity_name(Granularity::model)}),
      ParamSpec(
          "bucket", ParamKind::bytes, "25MB",
          "granularity layer with overlap: bucket size, as PyTorch DDP fuses layers (0B: one bucket per "
          "layer)"),
      ParamSpec("overlap", ParamKind::boolean, "true",
                "granularity layer: true = DDP's buckets overlapping the backward pass; false = mlbench's "
                "one aggregation per tensor, in model.parameters() order, after the backward pass"),
      ParamSpec("apply_to", ParamKind::choice, "",
                "aggregate gradients (then step) or weights (after a local step); default gradients, "
                "weights for decentralized algorithms")
          .one_of({apply_to_name(ApplyTo::gradients), apply_to_name(ApplyTo::weights)}),
      ParamSpec("every", ParamKind::integer, "1",
                "aggregate every k-th step only (local SGD): steps k-1, 2k-1, ... aggregate, the others "
                "train locally without communicating")
          .between(1, 1e9),
  };
}

void read_model(const std::optional<YamlValue>& model, ModelSpec& spec, const std::string& scenario_file) {
  std::optional<YamlMap> map;
  if (model) map.emplace(*model);
  const Params p = map ? map->params(model_param_specs()) : default_params(model_param_specs());
  spec.size_bytes = static_cast<std::uint64_t>(p.integer("size"));
  spec.batch = p.integer("batch");
  spec.proxy_dim = p.integer("proxy_dim");
  spec.math = p.boolean("math");
  if (!map) return;
  const auto size = map->get("size"), layers = map->get("layers"), batch = map->get("batch");
  if (size && spec.size_bytes == 0) size->fail("must be a positive size, e.g. 100MB");
  if (!layers) {
    if (batch) batch->fail("only used with 'layers' (FLOPs are per sample)");
  } else {
    if (size) size->fail("the layer table sets the size; give one or the other");
    spec.layers_file = find_input_file(*layers, "layer table", scenario_file, DataKind::layer_table);
    read_layer_table(spec.layers_file, spec);
  }
  map->finish();
}

void read_common_algorithm_keys(YamlMap& alg, AlgorithmSpec& spec, bool consensus) {
  const Params p = alg.params(common_algorithm_param_specs());
  spec.op.kind = parse_reduce_kind(p.text("op"));
  if (spec.op.kind == ReduceKind::custom_avg) {
    if (!p.has("denominator")) alg.value().fail("op custom_avg needs 'denominator' (a positive number)");
    spec.op.denominator = p.real("denominator");
  } else if (p.has("denominator")) {
    alg.get("denominator")->fail("only used with op: custom_avg");
  }
  spec.granularity =
      p.text("granularity") == granularity_name(Granularity::layer) ? Granularity::layer : Granularity::model;
  spec.bucket_bytes = static_cast<std::uint64_t>(p.integer("bucket"));
  spec.overlap = p.boolean("overlap");
  const YAML::Node given = alg.value().node();
  // `overlap: true`, the default, is accepted by model too (nothing overlaps there), so a sweep or
  // --set that writes the default never fails; `false` asks for per-tensor aggregation.
  if (!spec.overlap && spec.granularity == Granularity::model)
    alg.get("overlap")->fail(
        "false is only used with granularity: layer (by model the whole gradient is one aggregation "
        "after the backward pass)");
  if (!spec.overlap && given["bucket"])
    alg.get("bucket")->fail(
        "not used with overlap: false (mlbench aggregates each tensor on its own, no buckets); leave it out");
  spec.every = static_cast<int>(p.integer("every"));
  spec.apply_to = consensus ? ApplyTo::gradients : ApplyTo::weights;
  if (p.has("apply_to"))
    spec.apply_to =
        p.text("apply_to") == apply_to_name(ApplyTo::weights) ? ApplyTo::weights : ApplyTo::gradients;
}

void read_training(YamlMap& top, Scenario& sc) {
  if (auto w = top.get("workload")) {
    YamlMap map(*w);
    sc.workload.enabled = true;
    sc.workload.as_written = map.params(workload_param_specs());
    sc.workload.options = workload_options(sc.workload.as_written);
    map.finish();
    if (!sc.model.math) w->fail("a training workload needs model.math: on");
    const std::int64_t dim = problem_parameter_count(sc.workload.options);
    const YAML::Node given = top.value().node()["model"];
    if (given && given.IsMap() && given["proxy_dim"] && sc.model.proxy_dim != dim)
      top.value()
          .child("model")
          .child("proxy_dim")
          .fail(fmt::format("the workload's problem has {} parameters; leave proxy_dim out", dim));
    sc.model.proxy_dim = dim;
  }
  sc.compute.straggler_as_written = default_params(straggler_param_specs());
  if (auto c = top.get("compute")) {
    YamlMap map(*c);
    map.expect(spec_keys(compute_param_specs()));
    map.finish();
    if (auto s = map.get("speed_factors")) sc.compute.speed = read_speed_factors(*s, sc.ranks);
    if (auto s = map.get("reduce_speed")) sc.compute.reduce_speed = read_reduce_speed(*s);
    if (auto s = map.get("straggler")) {
      YamlMap straggler(*s);
      sc.compute.straggler_as_written = straggler.params(straggler_param_specs());
      straggler.finish();
    }
    map.finish();
  }
  sc.compute.straggler = straggler_options(sc.compute.straggler_as_written);
}

std::uint64_t math_memory_limit() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page <= 0) return std::uint64_t{1} << 34;  // unknown: 16 GiB
  return static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page) / 2;
}

// Copies of its proxy gradient a rank holds at the peak of a step (measured, see below).
constexpr int kProxyCopiesPerRank = 5;

void check_math_memory(const YamlMap& top, const Scenario& sc) {
  if (!sc.model.math) return;
  // Each rank holds its proxy gradient, its buckets, the aggregation's result and the chunks in
  // flight: a 2-rank ring of 10^8 numbers peaked at 3.94 GB, 4.9 times its 800 MB of gradients (by
  // model.size or by layers and buckets alike). Counting one copy let 2 x 10^9 numbers through on a
  // 24 GB machine, where the run then used all of it and stalled.
  const double bytes = static_cast<double>(sc.ranks) * static_cast<double>(sc.model.proxy_dim) *
                       static_cast<double>(kFloatBytes);
  const std::uint64_t limit = math_memory_limit();
  if (bytes * kProxyCopiesPerRank <= static_cast<double>(limit)) return;
  const YAML::Node given = top.value().node()["model"];
  const YamlValue at = given && given.IsMap() && given["proxy_dim"]
                           ? top.value().child("model").child("proxy_dim")
                           : top.value().child(sc.workload.enabled ? "workload" : "ranks");
  at.fail(
      fmt::format("{} ranks x {} numbers (model.proxy_dim) x {} bytes = {} of proxy gradients, held about "
                  "{} times over while aggregating, more than the {} aggsim allows on this machine (half its "
                  "memory); lower proxy_dim or ranks, or set model.math: off",
                  sc.ranks, sc.model.proxy_dim, kFloatBytes, units::format_bytes(bytes), kProxyCopiesPerRank,
                  units::format_bytes(static_cast<double>(limit))));
}

void emit_model_layers(YAML::Emitter& out, const ModelSpec& spec) {
  if (spec.layers_file.empty()) return;
  out << YAML::Key << "layers" << YAML::Value << spec.layers_file;
  out << YAML::Key << "batch" << YAML::Value << spec.batch;
}

void emit_aggregation_scope(YAML::Emitter& out, const AlgorithmSpec& spec) {
  out << YAML::Key << "granularity" << YAML::Value << granularity_name(spec.granularity);
  // Only the keys that apply: reading resolved.yaml back refuses the others.
  if (spec.overlap) out << YAML::Key << "bucket" << YAML::Value << fmt::format("{}B", spec.bucket_bytes);
  if (spec.granularity == Granularity::layer) out << YAML::Key << "overlap" << YAML::Value << spec.overlap;
  out << YAML::Key << "apply_to" << YAML::Value << apply_to_name(spec.apply_to);
  out << YAML::Key << "every" << YAML::Value << spec.every;
}

void emit_training(YAML::Emitter& out, const Scenario& sc) {
  if (sc.workload.enabled) {
    out << YAML::Key << "workload" << YAML::Value << YAML::BeginMap;
    emit_params(out, workload_param_specs(), sc.workload.as_written);
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
  emit_params(out, straggler_param_specs(), sc.compute.straggler_as_written);
  out << YAML::EndMap;
  const ReduceSpeed& rs = sc.compute.reduce_speed;
  out << YAML::Key << "reduce_speed" << YAML::Value
      << (rs.from_host         ? std::string("host")
          : rs.bytes_per_s > 0 ? fmt::format("{}Bps", rs.bytes_per_s)
                               : "0");
  out << YAML::EndMap;
}

// A step costs its summary, its block of rank records and its steps.csv row (18 columns, at least
// 80 characters once the times are real numbers): 152 + 24 + 80 bytes, rounded down to 256, plus
// 48 bytes a rank. The asserts keep that a lower bound if the records shrink.
constexpr double kStepBytes = 256, kRankStepBytes = 48;
static_assert(sizeof(StepSummary) + sizeof(std::vector<RankStepRecord>) + 80 >= kStepBytes);
static_assert(sizeof(RankStepRecord) >= kRankStepBytes);

void check_step_memory(const YamlMap& top, const Scenario& sc) {
  const double per_step = kStepBytes + kRankStepBytes * static_cast<double>(sc.ranks);
  const double bytes = per_step * static_cast<double>(sc.steps);
  const std::uint64_t limit = math_memory_limit();
  if (bytes <= static_cast<double>(limit)) return;
  const YAML::Node given = top.value().node()["steps"];
  const YamlValue at = given ? top.value().child("steps") : top.value();
  at.fail(fmt::format(
      "{} steps of {} ranks need at least {} for their per-step records (256 + 48 x ranks bytes a step, "
      "kept as the steps complete), more than the {} aggsim allows on this machine (half its memory); "
      "run fewer steps",
      sc.steps, sc.ranks, units::format_bytes(bytes), units::format_bytes(static_cast<double>(limit))));
}

}  // namespace aggsim
