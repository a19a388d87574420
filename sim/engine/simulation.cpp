#include "sim/engine/simulation.hpp"

#include <simgrid/s4u.hpp>
#include <simgrid/version.h>
#include <fmt/format.h>

#include <algorithm>
#include <memory>

#include "algorithms/registry.hpp"
#include "sim/core/error.hpp"
#include "sim/platform/platform.hpp"
#include "sim/scenario/scenario_loader.hpp"
#include "sim/workload/synthetic_gradient.hpp"

XBT_LOG_NEW_DEFAULT_CATEGORY(aggsim_engine, "aggsim simulation driver");

namespace aggsim {

namespace sg4 = simgrid::s4u;

std::vector<std::string> network_preset_config(NetworkPreset preset) {
  switch (preset) {
    case NetworkPreset::lv08: return {"network/model:LV08"};
    // Latency + size/bandwidth exactly: no TCP window bound, no reverse ACK traffic.
    case NetworkPreset::alpha_beta:
      return {"network/model:CM02", "network/TCP-gamma:0", "network/crosstraffic:0"};
    case NetworkPreset::ns3: return {"network/model:ns-3"};
  }
  return {};
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
      throw InputError(fmt::format("{}: unknown network model '{}' (valid: LV08, Constant, SMPI, IB, CM02, ns-3)", a, model));
  }
}

// Our defaults first, then the preset, then the user's flags: SimGrid applies them in order, so
// the user's --cfg wins. Network models must be set before the platform is loaded.
std::unique_ptr<sg4::Engine> make_engine(const Scenario& sc, const std::vector<std::string>& user_args) {
  std::vector<std::string> args = {"aggsim", "--cfg=contexts/factory:raw", "--log=xbt_cfg.thres:warning",
                                   "--log=root.fmt:[%10.6r]%e[%a@%h]%e%m%n"};
  for (const auto& c : network_preset_config(sc.network)) args.push_back("--cfg=" + c);
  args.insert(args.end(), user_args.begin(), user_args.end());
  check_simgrid_args(user_args);
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  int argc = static_cast<int>(args.size());
  std::unique_ptr<sg4::Engine> engine;
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

std::vector<sg4::Host*> load_and_map(const Scenario& sc, sg4::Engine& engine, std::string& description) {
  build_platform(sc.platform, engine);
  auto hosts = hosts_in_natural_order(engine);
  const std::string what = sc.platform.file.empty() ? sc.platform.topology : sc.platform.file;
  description = fmt::format("{} ({} hosts)", what, hosts.size());
  if (static_cast<std::size_t>(sc.ranks) > hosts.size())
    throw InputError(fmt::format("{}: ranks: {} ranks do not fit on the {} hosts of {}", sc.source_file, sc.ranks,
                                 hosts.size(), what));
  hosts.resize(static_cast<std::size_t>(sc.ranks));
  return hosts;
}

// Everything one rank's actor needs; owned by the driver, outlives the simulation.
struct RankState {
  RankContext ctx;
  Comm comm;
  std::unique_ptr<Aggregator> aggregator;
  RankState(int rank, int world) : comm(rank, world) {}
};

void run_rank(RankState& st, const Scenario& sc, StepLog& log, const SimulationHooks& hooks) {
  RankContext& ctx = st.ctx;
  for (int step = 0; step < sc.steps; ++step) {
    ctx.step = step;
    RankStepRecord& rec = log.at(ctx.rank, step);
    rec.start = sg4::Engine::get_clock();
    Gradient grad = flat_gradient(
        sc.model.math ? synthetic_gradient(sc.seed, ctx.rank, step, sc.model.proxy_dim) : Eigen::VectorXf(),
        sc.model.wire_elements());
    rec.compute_end = sg4::Engine::get_clock();
    const Eigen::VectorXf before = hooks.after_aggregate ? grad.values : Eigen::VectorXf();
    const CommCounters c0 = st.comm.counters();
    rec.agg_start = sg4::Engine::get_clock();
    st.aggregator->aggregate(ctx, grad);
    rec.agg_end = sg4::Engine::get_clock();
    rec.bytes_sent = st.comm.counters().bytes_sent - c0.bytes_sent;
    rec.messages_sent = st.comm.counters().messages_sent - c0.messages_sent;
    if (hooks.after_aggregate) hooks.after_aggregate(ctx.rank, step, before, grad.values);
  }
  st.aggregator->finish(ctx);
}

}  // namespace

std::string check_platform(const Scenario& sc, const std::vector<std::string>& simgrid_args) {
  auto engine = make_engine(sc, simgrid_args);
  std::string description;
  load_and_map(sc, *engine, description);
  return description;
}

SimulationResult simulate(const Scenario& sc, const std::vector<std::string>& simgrid_args,
                          const SimulationHooks& hooks) {
  auto engine = make_engine(sc, simgrid_args);
  SimulationResult result;
  const auto hosts = load_and_map(sc, *engine, result.platform_description);
  const RankLayout layout = layout_of(hosts);

  const AlgorithmInfo* algorithm = find_algorithm(sc.algorithm.name);
  const CompressorInfo* compressor = find_compressor(sc.compression.name);
  AlgorithmConfig config = algorithm_config(sc);
  config.make_compressor = [compressor, &sc] { return compressor->make(sc.compression.params); };

  result.log = StepLog(sc.ranks, sc.steps);
  std::vector<std::unique_ptr<RankState>> ranks;
  ranks.reserve(static_cast<std::size_t>(sc.ranks));
  for (int r = 0; r < sc.ranks; ++r) {
    auto st = std::make_unique<RankState>(r, sc.ranks);
    st->ctx.rank = r;
    st->ctx.world = sc.ranks;
    st->ctx.comm = &st->comm;
    st->ctx.host = hosts[static_cast<std::size_t>(r)];
    st->ctx.layout = &layout;
    st->ctx.seed = sc.seed;
    st->aggregator = algorithm->make(config);
    RankState* raw = st.get();
    sg4::Actor::create(fmt::format("rank-{}", r), st->ctx.host,
                       [raw, &sc, &result, &hooks] { run_rank(*raw, sc, result.log, hooks); });
    ranks.push_back(std::move(st));
  }
  engine->run();
  result.sim_time_s = sg4::Engine::get_clock();
  for (const auto& st : ranks) {
    result.bytes_sent += st->comm.counters().bytes_sent;
    result.messages_sent += st->comm.counters().messages_sent;
  }
  return result;
}

}  // namespace aggsim
