#include "sim/engine/simulation.hpp"

#include <fmt/format.h>
#include <simgrid/version.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <simgrid/s4u.hpp>

#include "algorithms/registry.hpp"
#include "sim/core/checked.hpp"
#include "sim/core/error.hpp"
#include "sim/core/terminal.hpp"
#include "sim/engine/actor_stacks.hpp"
#include "sim/engine/calibration_reach.hpp"
#include "sim/engine/link_classes.hpp"
#include "sim/engine/merged_flows.hpp"
#include "sim/engine/network_factors.hpp"
#include "sim/engine/parallel_layout.hpp"
#include "sim/engine/rank_actor.hpp"
#include "sim/engine/solver_stack.hpp"
#include "sim/metrics/link_usage.hpp"
#include "sim/platform/link_places.hpp"
#include "sim/platform/ns3_environment.hpp"
#include "sim/platform/platform.hpp"
#include "sim/scenario/scenario_loader.hpp"

XBT_LOG_NEW_DEFAULT_CATEGORY(aggsim_engine, "aggsim simulation driver");

// Sanitized builds use thread contexts: raw ones switch stacks behind AddressSanitizer's back.
#ifndef AGGSIM_CONTEXT_FACTORY
#define AGGSIM_CONTEXT_FACTORY "raw"
#endif

namespace aggsim {

namespace sg4 = simgrid::s4u;

std::vector<std::string> network_preset_config(NetworkPreset preset) {
  switch (preset) {
    case NetworkPreset::lv08:
      return {"network/model:LV08"};
    // Latency + size/bandwidth exactly: no reverse ACK traffic, and a TCP window so large that its
    // bound (gamma / 2 latency: 5e17 B/s at 1 ms) never applies. Not 0, which SimGrid 3.32's CM02
    // takes as "no bound at all" and then ignores a transfer's own rate cap (Comm::set_rate).
    case NetworkPreset::alpha_beta:
      return {"network/model:CM02", "network/TCP-gamma:1e15", "network/crosstraffic:0"};
    case NetworkPreset::ns3:
      return {"network/model:ns-3"};
    case NetworkPreset::auto_by_fabric:  // resolved by effective_network() first
      break;
  }
  return {};
}

double lv08_completion_precision(double slowest_link_bandwidth, int ranks_per_node) {
  return std::max(kSimGridDefaultPrecision,
                  kMergedSizeDifferenceBytes * ranks_per_node / slowest_link_bandwidth);
}

std::string simgrid_version() {
  return fmt::format("{}.{}.{}", SIMGRID_VERSION_MAJOR, SIMGRID_VERSION_MINOR, SIMGRID_VERSION_PATCH);
}

namespace {

// SimGrid aborts the process on an unknown network model; check the one flag users get wrong most.
void check_simgrid_args(const std::vector<std::string>& user_args) {
  static const std::vector<std::string> models = {"LV08", "Constant", "SMPI", "IB", "CM02", "ns-3"};
  const std::string key = "--cfg=network/model:";
  for (const auto& a : user_args) {
    if (a.rfind(key, 0) != 0) continue;
    const std::string model = a.substr(key.size());
    if (std::find(models.begin(), models.end(), model) == models.end())
      throw InputError(fmt::format(
          "{}: unknown network model '{}' (valid: LV08, Constant, SMPI, IB, CM02, ns-3)", a, model));
  }
}

// Set once make_engine has run (simgrid_engine_made()).
bool g_engine_made = false;

// Our defaults first, then the preset, then the user's flags: SimGrid applies them in order, so
// the user's --cfg wins. Network models must be set before the platform is loaded.
std::unique_ptr<sg4::Engine> make_engine(const Scenario& sc, const std::vector<std::string>& user_args) {
  std::vector<std::string> args = {"aggsim", "--cfg=contexts/factory:" AGGSIM_CONTEXT_FACTORY,
                                   "--log=xbt_cfg.thres:warning", "--log=root.fmt:[%10.6r]%e[%a@%h]%e%m%n"};
  // Each actor's stack and its guard page are two memory mappings; Linux allows 65,530 by default,
  // which two actors per rank (DDP buckets) exhaust at 16,384 ranks. Large runs go without guard
  // pages (they only catch a stack overflow; results are the same).
  if (sc.ranks >= 8192) args.push_back("--cfg=contexts/guard-size:0");
  for (const auto& c : network_preset_config(effective_network(sc))) args.push_back("--cfg=" + c);
  args.insert(args.end(), user_args.begin(), user_args.end());
  check_simgrid_args(user_args);
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  int argc = static_cast<int>(args.size());
  std::unique_ptr<sg4::Engine> engine;
  g_engine_made = true;
  try {
    engine = std::make_unique<sg4::Engine>(&argc, argv.data());
  } catch (const std::exception& e) {
    // SimGrid lists every config key after the first line; the first line says what is wrong.
    std::string what = e.what();
    what = what.substr(0, what.find('\n'));
    throw InputError(fmt::format("SimGrid flag: {} (see --cfg=help for the keys)", what));
  }
  if (argc > 1) throw InputError(fmt::format("unknown SimGrid argument '{}'", argv[1]));
  return engine;
}

bool sets_precision(const std::vector<std::string>& user_args) {
  return std::any_of(user_args.begin(), user_args.end(),
                     [](const std::string& a) { return a.rfind("--cfg=surf/precision:", 0) == 0; });
}

bool sets_factors(const std::vector<std::string>& user_args) {
  return std::any_of(user_args.begin(), user_args.end(), [](const std::string& a) {
    return a.rfind("--cfg=network/latency-factor", 0) == 0 ||
           a.rfind("--cfg=network/bandwidth-factor", 0) == 0;
  });
}

// Under LV08 every flow also loads its reverse route (ACK crosstraffic), which links all flows of a
// collective into one solver system; flows whose sizes differ by a few bytes (unevenly split
// chunks) then finish nanoseconds apart, each finish is its own event that re-solves every flow,
// and a ring's cost grows as p^3. Completions closer than the time two elements take on the
// slowest link shared by a node's ranks are merged instead (each moves earlier by at most that
// much): see README "Completion precision under LV08".
void set_completion_precision(const Scenario& sc, sg4::Engine& engine, const RankLayout& layout,
                              const std::vector<std::string>& user_args) {
  if (effective_network(sc) != NetworkPreset::lv08 || sets_precision(user_args)) return;
  double slowest = 0;
  for (const sg4::Link* link : engine.get_all_links()) {
    const double bandwidth = link->get_bandwidth();
    if (bandwidth > 0 && (slowest == 0 || bandwidth < slowest)) slowest = bandwidth;
  }
  if (slowest == 0) return;
  int ranks_per_node = 1;  // the largest node: its ranks' flows share its slowest link
  for (std::size_t first = 0, r = 0; r <= layout.node_of_rank.size(); ++r)
    if (r == layout.node_of_rank.size() || layout.node_of_rank[r] != layout.node_of_rank[first]) {
      ranks_per_node = std::max(ranks_per_node, static_cast<int>(r - first));
      first = r;
    }
  engine.set_config(
      fmt::format("surf/precision:{:.17g}", lv08_completion_precision(slowest, ranks_per_node)));
}

// Moves the algorithm's pinned hosts, in the order given, to the front of `hosts`; the others keep
// their natural order. The names were checked for duplicates when the scenario loaded.
RankPlacement pin_first_hosts(const Scenario& sc, const std::string& what, std::vector<sg4::Host*>& hosts) {
  const AlgorithmInfo& algorithm = *sc.algorithm.entry;
  if (!algorithm.placement) return {};
  RankPlacement placement = algorithm.placement(sc.algorithm.params);
  std::vector<sg4::Host*> pinned;
  for (const auto& name : placement.first_hosts) {
    const auto it =
        std::find_if(hosts.begin(), hosts.end(), [&](const sg4::Host* h) { return h->get_name() == name; });
    if (it == hosts.end())
      throw InputError(fmt::format("{}: algorithm.{}: no host '{}' in {} (its hosts: {}{})",
                                   sc.where("algorithm." + placement.key), placement.key, name, what,
                                   hosts.front()->get_name(),
                                   hosts.size() > 1 ? " ... " + hosts.back()->get_name() : ""));
    pinned.push_back(*it);
    hosts.erase(it);
  }
  hosts.insert(hosts.begin(), pinned.begin(), pinned.end());
  return placement;
}

std::vector<sg4::Host*> load_and_map(const Scenario& sc, sg4::Engine& engine, std::string& description) {
  build_platform(sc.platform, engine);
  auto hosts = hosts_in_natural_order(engine);
  const std::string what = sc.platform.file.empty() ? sc.platform.topology : sc.platform.file;
  description = fmt::format("{} ({} hosts)", what, hosts.size());
  const RankPlacement placement = pin_first_hosts(sc, what, hosts);
  const std::size_t pinned = placement.first_hosts.size();
  if (static_cast<std::size_t>(sc.ranks) > hosts.size()) {
    if (pinned > 0)
      throw InputError(
          fmt::format("{}: algorithm.{}: the {} other ranks do not fit on the {} hosts of {} left "
                      "after the {} named ones (ranks: {})",
                      sc.where("algorithm." + placement.key), placement.key,
                      sc.ranks - static_cast<int>(pinned), hosts.size() - pinned, what, pinned, sc.ranks));
    const std::string ways_out =
        sc.platform.file.empty()
            ? ""
            : fmt::format(
                  ": use ranks: {} or fewer, a platform XML file with at least {} hosts, or a generated "
                  "platform (platform: {{topology: cluster, hosts: {}}})",
                  hosts.size(), sc.ranks, sc.ranks);
    throw InputError(fmt::format("{}: ranks: {} ranks do not fit on the {} hosts of {}{}", sc.where("ranks"),
                                 sc.ranks, hosts.size(), what, ways_out));
  }
  hosts.resize(static_cast<std::size_t>(sc.ranks));
  if (!sc.platform.file.empty()) check_rank_routes(hosts, sc.platform.file);
  return hosts;
}

// The modeled layers: the scenario's table, or one flat layer of model.size without compute.
std::vector<LayerSpec> modeled_layers(const ModelSpec& model) {
  if (!model.layers.empty()) return model.layers;
  LayerSpec flat;
  flat.name = "model";
  flat.rows = static_cast<std::int64_t>(model.wire_elements());
  flat.params = flat.rows;
  flat.unstructured = true;
  return {flat};
}

// Each data-parallel group's plan; a layout the model cannot be cut into is refused at its key.
std::vector<GroupPlan> plans_or_refusal(const Scenario& sc, const PlanRecipe& recipe) {
  try {
    return group_plans(sc.parallel, modeled_layers(sc.model), recipe);
  } catch (const InputError& e) {
    throw InputError(fmt::format("{}: parallel: {}", sc.where("parallel"), e.what()));
  }
}

Bucketing bucketing(const AlgorithmSpec& spec) {
  if (spec.granularity == Granularity::model) return Bucketing::whole_model;
  return spec.overlap ? Bucketing::by_size : Bucketing::per_tensor;
}

// The prepare stage of the scenario's algorithm on the platform's rank layout; its parameter
// errors point at the scenario's keys.
AlgorithmRun prepare_algorithm(const Scenario& sc, const AlgorithmConfig& config) {
  try {
    return prepare_run(config);
  } catch (const ParamError& e) {
    const std::string key = scenario_key_of(sc, e.key);
    throw InputError(fmt::format("{}: {}: {}", sc.where(key), key, e.what()));
  }
}

// The exact reduction the math log compares with: the scenario's op over the contributing ranks.
std::unique_ptr<MathLog> make_math_log(const Scenario& sc, const AlgorithmRun& algorithm) {
  // A sharded rank holds only its shard of the result: its math is checked on the weights it
  // gathers (agg_error and rank_spread stay empty).
  if (!sc.model.math || algorithm.sharding) return nullptr;
  // Under a parallel layout the ranks of a model replica train on the same data: the exact
  // reduction is over the first data-parallel group's ranks, one a replica.
  std::vector<bool> contributes(static_cast<std::size_t>(sc.ranks), true);
  for (int r = 0; r < sc.ranks; ++r) {
    const DataParallelPlace place = data_parallel_place(sc.parallel, sc.ranks, r);
    contributes[static_cast<std::size_t>(r)] =
        place.group == 0 && (!algorithm.contributes || algorithm.contributes(place.data_rank));
  }
  const auto n = std::count(contributes.begin(), contributes.end(), true);
  ExactReduction rule;
  switch (sc.algorithm.op.kind) {
    case ReduceKind::sum:
      break;
    case ReduceKind::avg:
      rule.divisor = static_cast<double>(n);
      break;
    case ReduceKind::custom_avg:
      rule.divisor = sc.algorithm.op.denominator;
      break;
    case ReduceKind::min:
      rule.kind = ExactReduction::Kind::min;
      break;
    case ReduceKind::max:
      rule.kind = ExactReduction::Kind::max;
      break;
  }
  return std::make_unique<MathLog>(sc.steps, rule, std::move(contributes));
}

// Why this run's steps are all simulated ("" when repeated steps may be replayed).
std::string replay_refusal(const Scenario& sc, const AlgorithmRun& algorithm) {
  if (!sc.engine.replay) return "engine.replay: false";
  if (sc.output.trace) return "output.trace: the trace records every transfer";
  if (sc.network == NetworkPreset::ns3) return "network: ns3 keeps transport state from step to step";
  if (sc.compute.straggler.kind != StragglerKind::none)
    return "compute.straggler: compute times change from step to step";
  if (!algorithm.replay_refusal.empty())
    return fmt::format("{}: {}", sc.algorithm.name, algorithm.replay_refusal);
  if (sc.compression.entry->sizes_depend_on_data)
    return fmt::format("{}: encoded sizes depend on the data", sc.compression.name);
  return "";
}

// Each call's sizes: the bucket's dense fp32 bytes, and one rank's contribution as the scenario's
// compressor encodes it (the formula on the modeled tensors: exact for fixed-size encodings, the
// upper bound for threshold, the expected size for ATOMO).
std::vector<CallSize> call_sizes(const StepPlan& plan, const AlgorithmConfig& config) {
  const auto compressor = config.make_compressor();
  std::vector<CallSize> out;
  for (const Bucket& b : plan.buckets)
    out.push_back({b.wire_elements * kFloatBytes, compressor->encoded_bytes(b.wire_shape)});
  return out;
}

// A sharded step's call slots (ShardedCall): each unit's reduce-scatter, then its gathers before
// the forward pass, before the backward pass and at the step's end. Bytes cover the whole unit (an
// all-gather's result, a reduce-scatter's input: nccl-tests' sizes).
std::vector<CallSize> sharded_call_sizes(const StepPlan& plan, const ParameterSharding& sharding) {
  std::vector<CallSize> out;
  for (int kind = 0; kind < kShardedCallKinds; ++kind)
    for (const Bucket& b : plan.buckets) {
      CallSize size;
      const bool reduce = kind == static_cast<int>(ShardedCall::reduce);
      size.dense_bytes = b.wire_elements * kFloatBytes;
      size.wire_bytes = b.wire_elements * (reduce ? sharding.grad_element_bytes : sharding.param_element_bytes);
      if (reduce && sharding.reduce_wire_bytes) size.wire_bytes = sharding.reduce_wire_bytes(b.wire_shape);
      size.collective = reduce ? CollectiveKind::reduce_scatter : CollectiveKind::all_gather;
      size.group_size = sharding.shard_group;
      size.unit = fmt::format("{}-{}", b.first_layer, b.last_layer);
      out.push_back(std::move(size));
    }
  return out;
}

// "0-15", "2-15", "0,2-7": the ranks whose gradients a call reduces (all, unless the algorithm
// leaves some out: a dedicated parameter server's servers).
std::string rank_group(int ranks, const AlgorithmRun& algorithm, int& size) {
  std::string out;
  size = 0;
  for (int r = 0; r < ranks;) {
    if (algorithm.contributes && !algorithm.contributes(r)) {
      ++r;
      continue;
    }
    int last = r;
    while (last + 1 < ranks && (!algorithm.contributes || algorithm.contributes(last + 1))) ++last;
    out += (out.empty() ? "" : ",") + (last == r ? std::to_string(r) : fmt::format("{}-{}", r, last));
    size += last - r + 1;
    r = last + 1;
  }
  return out;
}

// No result without a finished simulation: every rank done with every step and a finite clock.
// SimGrid reports a deadlock on stderr and returns normally, so a run would otherwise write outputs
// with missing steps or an undefined time. (Actors still waiting once every step is done are no
// failure: an asynchronous parameter server's servers wait for pushes that no longer come.)
void check_finished(const Scenario& sc, const StepsDone& steps_done) {
  const double clock = sg4::Engine::get_clock();
  const int step = steps_done.steps_done();
  const std::string where = step < sc.steps
                                ? fmt::format("in step {} of {} ({} of {} ranks finished it)", step + 1,
                                              sc.steps, steps_done.ranks_done(step), sc.ranks)
                                : "after the last step";
  if (!std::isfinite(clock))
    throw SimulationError(fmt::format(
        "the simulation did not finish: the simulated time became {} {}; a transfer or a computation "
        "takes longer than a double can count (check the scenario's and the platform's rates and "
        "latencies)",
        std::isnan(clock) ? "undefined (NaN)" : "infinite", where));
  if (steps_done.diverged_step() >= 0)
    throw SimulationError(fmt::format(
        "the training diverged: rank {}'s gradient left the finite numbers in step {} of {}; lower "
        "workload.lr (or run fewer steps); nothing was written",
        steps_done.diverged_rank(), steps_done.diverged_step() + 1, sc.steps));
  if (step < sc.steps)
    throw SimulationError(fmt::format(
        "the simulation deadlocked at {} s {}: ranks wait for a message or an activity that never "
        "completes (SimGrid's listing above names them); this is a bug of aggsim or of the algorithm",
        clock, where));
}

}  // namespace

PreparedRun::PreparedRun(const Scenario& sc, const std::vector<std::string>& simgrid_args, bool link_load)
    : engine(make_engine(sc, simgrid_args)) {
  forget_installed_factors();
  if (link_load) enable_link_load();
  hosts = load_and_map(sc, *engine, platform_description);
  check_solver_stack(engine->get_link_count(), platform_description);
  // network: auto on ethernet is LV08 between nodes only (the user's own factor flags win).
  if (sc.network == NetworkPreset::auto_by_fabric && effective_network(sc) == NetworkPreset::lv08 &&
      !sets_factors(simgrid_args))
    install_fabric_factors(*engine);
  // What the run receives of its calibration reaches the network, the warnings and the algorithm
  // through one handle.
  config = algorithm_config(sc);
  const RunCalibration* calibration = config.calibration.get();
  install_network_factors(*engine, config.calibration);
  layout = layout_of(hosts);
  for (const auto& w : calibration_reach_warnings(sc, calibration, layout))
    print_lines(stderr, "aggsim: warning: {}\n", w);
  link_classes = effective_link_classes(sc, calibration, hosts, layout);
  if (sc.parallel.groups() > 1) {
    check_groups_alike(layout, sc.parallel, sc.ranks, sc.where("parallel"));
    group_layout = aggsim::group_layout(layout, sc.parallel, sc.ranks, 0);
    const DataParallelPlace first = data_parallel_place(sc.parallel, sc.ranks, 0);
    for (int d = 0; d < config.world; ++d)
      group_hosts.push_back(hosts[static_cast<std::size_t>(first.global_rank(d))]);
  }
  const bool grouped = sc.parallel.groups() > 1;
  config.set_platform(grouped ? &group_layout : &layout, grouped ? &group_hosts : &hosts,
                      [this, &sc, simgrid_args, grouped](const std::vector<std::vector<int>>& nodes) {
                        return merged_node_flows_refusal(sc, config.calibration.get(),
                                                         grouped ? group_hosts : hosts, nodes, simgrid_args);
                      });
  // The loader's prepare stage when it read nothing of the platform: one prepare per run.
  std::optional<AlgorithmRun> loaded;
  if (sc.prepared_at_load) loaded = sc.prepared_at_load->take_for(config);
  algorithm = loaded ? std::move(*loaded) : prepare_algorithm(sc, config);
  fit_actor_stacks(sc, algorithm, *engine, simgrid_args);
  if (algorithm.pieces_pay_latency)
    install_zero_latency(*engine);
  else if (algorithm.some_pieces_pay_latency && effective_network(sc) != NetworkPreset::ns3)
    install_receiver_latency(*engine);  // ns-3 takes no latency factor
  config.set_platform(grouped ? &group_layout : &layout, grouped ? &group_hosts : &hosts,
                      nullptr);  // the refusal holds the scenario, which may not outlive this
}

PreparedRun::~PreparedRun() = default;

bool simgrid_engine_made() {
  return g_engine_made;
}

std::string check_platform(const Scenario& sc, const std::vector<std::string>& simgrid_args,
                           std::string* checks_report) {
  std::string description;
  run_on_simulation_stack([&] {
    const PreparedRun prepared(sc, simgrid_args, false);
    if (checks_report && prepared.algorithm.checks_report) *checks_report = prepared.algorithm.checks_report();
    description = prepared.platform_description;
  });
  return description;
}

namespace {

// The training problem and its evaluator, when the scenario has a workload.
struct Training {
  std::unique_ptr<Workload> workload;
  std::unique_ptr<Evaluator> evaluator;
};

Training make_training(const Scenario& sc) {
  Training t;
  if (!sc.workload.enabled) return t;
  t.workload = std::make_unique<Workload>(sc.workload.options, sc.seed);
  // Local steps (every > 1) leave the ranks apart even under an all-reduce: report their spread.
  t.evaluator = std::make_unique<Evaluator>(*t.workload, sc.ranks, sc.steps,
                                            !sc.algorithm.entry->consensus || sc.algorithm.every > 1);
  return t;
}

// One state per rank, each with its aggregators (one per bucket), its actors started.
std::vector<std::unique_ptr<RankState>> start_ranks(const Scenario& sc, const PreparedRun& prepared,
                                                    const RunShared& run, Tracer* tracer, bool record_steps,
                                                    bool math) {
  std::vector<std::unique_ptr<RankState>> ranks;
  ranks.reserve(static_cast<std::size_t>(sc.ranks));
  for (int r = 0; r < sc.ranks; ++r) {
    sg4::Host* host = prepared.hosts[static_cast<std::size_t>(r)];
    const DataParallelPlace place = data_parallel_place(sc.parallel, sc.ranks, r);
    auto st = std::make_unique<RankState>(place.data_rank, place.group_size);
    st->comm.number_as(place.first_rank, place.stride);
    if (sc.parallel.groups() > 1) st->group_layout = &prepared.group_layout;
    st->plan = &run.plans[static_cast<std::size_t>(place.group)];
    st->data_rank = place.data_rank;
    st->ctx.rank = r;
    st->ctx.world = sc.ranks;
    st->ctx.comm = &st->comm;
    st->comm.set_tracer(tracer);
    st->comm.record_steps(record_steps);
    st->comm.set_reduce_flops_per_byte(sc.compute.reduce_speed.flops_per_byte(host->get_speed()));
    st->ctx.host = host;
    st->ctx.layout = &prepared.layout;
    st->ctx.seed = sc.seed;
    if (math) st->ctx.compression = &st->compression;
    for (std::size_t b = 0; b < st->plan->step.buckets.size(); ++b)
      st->aggregators.push_back(
          make_aggregator(prepared.algorithm, *sc.compression.transport, prepared.config));
    if (run.workload) st->trainer = std::make_unique<RankTrainer>(*run.workload, place.data_rank);
    start_rank(*st, run);
    ranks.push_back(std::move(st));
  }
  return ranks;
}

// Runs the engine to its end, reporting progress through the hooks, then checks that every step
// finished.
void run_engine(const Scenario& sc, sg4::Engine& engine, const SimulationHooks& hooks,
                const StepsDone& steps_done, const std::vector<std::unique_ptr<RankState>>& ranks) {
  WallClockGate gate(hooks.progress_interval_s);
  const auto progress = [&](bool finished) {
    RunProgress p;
    p.steps_done = steps_done.steps_done();
    p.steps_total = sc.steps;
    p.sim_time_s = sg4::Engine::get_clock();
    for (const auto& st : ranks) add_saturating(p.messages, st->comm.counters().messages_sent);
    p.elapsed_s = gate.elapsed_s();
    p.finished = finished;
    hooks.progress(p);
  };
  // SimGrid keeps its callbacks for the life of the process: this one goes quiet when the run returns.
  auto heartbeat = std::make_shared<std::function<void()>>([&] {
    if (gate.due()) progress(false);
  });
  if (hooks.progress)
    sg4::Engine::on_time_advance_cb([weak = std::weak_ptr<std::function<void()>>(heartbeat)](double) {
      if (const auto beat = weak.lock()) (*beat)();
    });
  engine.run();
  heartbeat.reset();
  check_finished(sc, steps_done);
  if (hooks.progress) progress(true);
}

// Each rank's host and node for the trace: a node shared by several ranks is named after its
// aggsim_node property (`node-3`, as the generators number nodes); a host alone on its node is its
// own node.
std::vector<RankPlace> rank_places(const std::vector<sg4::Host*>& hosts, const RankLayout& layout) {
  std::map<int, int> ranks_on;
  for (int node : layout.node_of_rank) ++ranks_on[node];
  std::vector<RankPlace> places;
  for (std::size_t r = 0; r < hosts.size(); ++r) {
    RankPlace p{hosts[r]->get_name(), hosts[r]->get_name()};
    const int node = r < layout.node_of_rank.size() ? layout.node_of_rank[r] : -1;
    if (node >= 0 && ranks_on[node] > 1) {
      const std::string& property = host_facts(hosts[r]).node;
      p.node = fmt::format("node-{}", !property.empty() ? property : std::to_string(node));
    }
    places.push_back(std::move(p));
  }
  return places;
}

// simulate() on the calling thread.
SimulationResult simulate_here(const Scenario& sc, const std::vector<std::string>& simgrid_args,
                               const SimulationHooks& hooks) {
  std::unique_ptr<Tracer> tracer;  // output.trace: timeline and link usage
  // SimGrid 3.32's link-load plugin never attaches to the links of an XML <cluster> and then
  // crashes on them: use it on generated platforms only (links.csv leaves its columns empty otherwise).
  const bool link_load = sc.output.trace && sc.platform.file.empty();
  if (sc.output.trace) tracer = std::make_unique<Tracer>();
  PreparedRun prepared(sc, simgrid_args, link_load);
  sg4::Engine& engine = *prepared.engine;
  const auto& hosts = prepared.hosts;
  if (link_load) track_all_links(engine);
  set_completion_precision(sc, engine, prepared.layout, simgrid_args);
  SimulationResult result;
  result.platform_description = prepared.platform_description;
  result.link_classes = prepared.link_classes;
  result.calibration = prepared.config.calibration;

  result.log = StepLog(sc.ranks, sc.steps, sc.algorithm.every);
  if (prepared.algorithm.sharding) result.log.report_gathers();
  StepsDone steps_done(sc.ranks);
  const Training training = make_training(sc);
  const std::unique_ptr<MathLog> math_log = make_math_log(sc, prepared.algorithm);
  // Sharded data parallelism's units are its buckets, of at least `unit` bytes each.
  const auto& sharding = prepared.algorithm.sharding;
  PlanRecipe recipe;
  recipe.bucketing = sharding ? Bucketing::by_size : bucketing(sc.algorithm);
  recipe.bucket_bytes = sharding ? sharding->unit_bytes : sc.algorithm.bucket_bytes;
  recipe.calls_per_bucket = sharding ? kShardedCallKinds : 1;
  if (training.workload) recipe.proxy_tensors = training.workload->problem->tensors();
  recipe.proxy_dim = sc.model.proxy_dim;
  std::vector<GroupPlan> plans = plans_or_refusal(sc, recipe);
  result.rank_group = rank_group(sc.ranks, prepared.algorithm, result.group_size);
  if (sc.parallel.groups() > 1) result.group_size = prepared.config.world;
  for (int stage = 0; stage < sc.parallel.pipeline; ++stage) {  // a stage's tensor ranks share its calls
    const int group = stage * sc.parallel.tensor;
    const StepPlan& step = plans[static_cast<std::size_t>(group)].step;
    for (CallSize& size : sharding ? sharded_call_sizes(step, *sharding) : call_sizes(step, prepared.config)) {
      if (sc.parallel.groups() > 1) size.rank_group = group_ranks(sc.parallel, sc.ranks, group);
      result.call_sizes.push_back(std::move(size));
    }
  }
  result.calls = CollectiveLog(static_cast<int>(result.call_sizes.size()));
  std::unique_ptr<ReplicaSync> replicas;
  if (sc.parallel.groups() > 1)
    replicas = std::make_unique<ReplicaSync>(sc.ranks / sc.parallel.groups(), sc.parallel.groups(),
                                             sc.model.math ? sc.model.proxy_dim : 0, sharding.has_value());
  ReplayBook replay(result.log, result.calls, sc.algorithm.every, replay_refusal(sc, prepared.algorithm));
  const RunShared run{sc,
                      std::move(plans),
                      ComputeModel(sc.compute.speed, sc.compute.straggler, sc.seed),
                      training.workload.get(),
                      training.evaluator.get(),
                      result.log,
                      result.calls,
                      hooks,
                      math_log.get(),
                      steps_done,
                      &replay,
                      sharding,
                      replicas.get()};
  const auto ranks =
      start_ranks(sc, prepared, run, tracer.get(), replay.refusal().empty(), math_log != nullptr);
  XBT_VERB("%d ranks, %d steps, %zu call(s) per step: simulation starts", sc.ranks, sc.steps,
           result.call_sizes.size());
  if (hooks.on_start) hooks.on_start(prepared.platform_description, prepared.link_classes);
  run_engine(sc, engine, hooks, steps_done, ranks);
  XBT_VERB("simulation ends at %g s", sg4::Engine::get_clock());
  result.sim_time_s = sg4::Engine::get_clock();
  if (tracer) {
    const LinkTraffic traffic(tracer->comms(), hosts);
    result.extra_files = {{"trace.json", tracer->chrome_trace(result.log, sc.name, traffic.loads(),
                                                              rank_places(hosts, prepared.layout))},
                          {"links.csv", links_csv(engine, traffic, result.sim_time_s, link_load,
                                                  link_places(sc.platform, engine, hosts))}};
  }
  for (const auto& st : ranks) {
    add_saturating(result.bytes_sent, st->comm.counters().bytes_sent);
    add_saturating(result.messages_sent, st->comm.counters().messages_sent);
  }
  if (training.evaluator) result.evaluations = training.evaluator->results();
  if (math_log) result.math = math_log->steps();
  if (prepared.algorithm.summary_fields) result.summary_fields = prepared.algorithm.summary_fields();
  if (sc.parallel.groups() > 1)
    for (const SummaryField& f : parallel_summary_fields(sc.parallel, sc.ranks))
      result.summary_fields.push_back(f);
  result.steps_replayed = replay.steps_replayed();
  result.replay_refusal = replay.refusal();
  return result;
}

}  // namespace

SimulationResult simulate(const Scenario& sc, const std::vector<std::string>& simgrid_args,
                          const SimulationHooks& hooks) {
  if (sc.network == NetworkPreset::ns3) reexec_with_ns3_defaults();  // ns-3 reads it at load time
  SimulationResult result;
  run_on_simulation_stack([&] { result = simulate_here(sc, simgrid_args, hooks); });
  return result;
}

}  // namespace aggsim
