// Neighbour averaging (decentralized SGD's gossip step, mlbench-core's DecentralizedAggregation):
// every rank sends its whole model to its out-neighbours, receives its in-neighbours' models and
// replaces its own by the weighted average x_i <- W_ii x_i + sum_j W_ij x_j. One exchange of full
// models per neighbour and round; no rank ever sees the global average, ranks only approach it at
// the rate the spectral gap of W sets. Assumes W doubly stochastic (checked at load time).
//
// Asynchronous variant: no rank waits for a neighbour's model of the current step. Each rank keeps
// one receive posted per in-neighbour, uses the newest model that has arrived and blocks only when
// it is older than `staleness` steps (bounded staleness; staleness 0 is the synchronous scheme).
// After the last step every rank receives what is still in flight (nothing is left in a mailbox).
#include <fmt/format.h>

#include <algorithm>

#include "algorithms/decentralized/averaging.hpp"
#include "algorithms/decentralized/mixing.hpp"
#include "algorithms/registry.hpp"

namespace aggsim {

namespace {

constexpr int kChannel = 3;  // apart from collectives' channel 0

struct NeighborAveragingOptions {
  int rounds = 1;
  bool asynchronous = false;
  int staleness = 1;
};

NeighborAveragingOptions neighbor_averaging_options(const Params& p) {
  return {static_cast<int>(p.integer("rounds")), p.boolean("asynchronous"),
          static_cast<int>(p.integer("staleness"))};
}

class NeighborAveraging final : public Aggregator {
 public:
  NeighborAveraging(std::shared_ptr<const MixingSchedule> schedule, int rounds, float scale)
      : schedule_(std::move(schedule)), rounds_(rounds), scale_(scale) {}

  void aggregate(RankContext& ctx, Gradient& grad) override {
    for (int r = 0; r < rounds_; ++r)
      mix(ctx, grad, schedule_->at(static_cast<std::int64_t>(ctx.step) * rounds_ + r));
    if (scale_ != 1.0f) grad.values *= scale_;
  }

 private:
  static void mix(RankContext& ctx, Gradient& grad, const MixingMatrix& w) {
    const auto me = static_cast<std::size_t>(ctx.rank);
    std::vector<RecvHandle> in;
    for (const auto& [j, wij] : w.in[me]) in.push_back(ctx.comm->irecv(j, kChannel));
    std::vector<SendHandle> out;
    for (int k : w.out[me]) out.push_back(ctx.comm->isend(k, model_payload(grad), kChannel));
    Eigen::VectorXf mixed = static_cast<float>(w.self[me]) * grad.values;
    for (std::size_t n = 0; n < in.size(); ++n) {
      const Payload model = in[n].wait();
      charge_reduce(*ctx.comm, model.wire_bytes);
      mixed += static_cast<float>(w.in[me][n].second) * model.values;
    }
    Comm::wait_all(out);
    grad.values = std::move(mixed);
  }

  std::shared_ptr<const MixingSchedule> schedule_;
  int rounds_;
  float scale_;
};

class AsyncNeighborAveraging final : public Aggregator {
 public:
  AsyncNeighborAveraging(std::shared_ptr<const MixingSchedule> schedule, int staleness, float scale)
      : schedule_(std::move(schedule)), staleness_(staleness), scale_(scale) {}

  void aggregate(RankContext& ctx, Gradient& grad) override {
    const MixingMatrix& w = schedule_->at(0);
    const auto me = static_cast<std::size_t>(ctx.rank);
    if (neighbours_.empty())
      for (const auto& [j, wij] : w.in[me])
        neighbours_.push_back({j, wij, ctx.comm->irecv(j, kChannel), {}, -1});

    reap_sends(sends_, false);
    for (int k : w.out[me]) sends_.push_back(ctx.comm->isend(k, model_payload(grad, ctx.step), kChannel));

    Eigen::VectorXf mixed = static_cast<float>(w.self[me]) * grad.values;
    for (auto& n : neighbours_) {
      while (n.pending.done()) take(ctx, n, true);
      while (n.latest_step < ctx.step - staleness_) take(ctx, n, true);  // too stale: wait
      // No model from this neighbour yet (first steps with staleness > 0): keep our own in its place.
      mixed += static_cast<float>(n.weight) * (n.latest_step >= 0 ? n.latest : grad.values);
    }
    // Every neighbour's model (or the own in its place) is added in: one model each.
    charge_reduce(*ctx.comm, neighbours_.size() * grad.wire_elements * kFloatBytes);
    grad.values = std::move(mixed);
    if (scale_ != 1.0f) grad.values *= scale_;
  }

  // Every neighbour ran the same steps: receive up to its last one, then complete our sends.
  void finish(RankContext& ctx) override {
    for (auto& n : neighbours_)
      while (n.latest_step < ctx.step) take(ctx, n, false);
    reap_sends(sends_, true);
  }

 private:
  struct InNeighbour {
    int rank;
    double weight;
    RecvHandle pending;
    Eigen::VectorXf latest;
    std::int64_t latest_step;
  };

  void take(RankContext& ctx, InNeighbour& n, bool repost) {
    Payload p = n.pending.wait();
    n.latest = std::move(p.values);
    n.latest_step = p.tag;
    if (repost || n.latest_step < ctx.step) n.pending = ctx.comm->irecv(n.rank, kChannel);
  }

  std::shared_ptr<const MixingSchedule> schedule_;
  int staleness_;
  float scale_;
  std::vector<InNeighbour> neighbours_;
  std::deque<SendHandle> sends_;
};

// Checks the options against the graph, builds the mixing schedule once for every rank.
AlgorithmRun prepare_neighbor_averaging(const AlgorithmConfig& cfg) {
  check_averaging_scheme(cfg, "neighbor_averaging");
  const NeighborAveragingOptions o = neighbor_averaging_options(cfg.params);
  auto schedule = std::make_shared<const MixingSchedule>(build_mixing(cfg.params, cfg.world, cfg.seed));
  if (o.asynchronous && o.rounds != 1)
    throw ParamError("rounds", "asynchronous averaging mixes once per step");
  if (o.asynchronous && schedule->rounds.size() != 1)
    throw ParamError("graph.peers",
                     "asynchronous averaging needs a static graph (not the one-peer exponential graph)");
  const float scale = averaging_scale(cfg.op, cfg.world);
  AlgorithmRun run;
  run.make_aggregator = [schedule, o, scale]() -> std::unique_ptr<Aggregator> {
    if (o.asynchronous) return std::make_unique<AsyncNeighborAveraging>(schedule, o.staleness, scale);
    return std::make_unique<NeighborAveraging>(schedule, o.rounds, scale);
  };
  run.summary_fields = [schedule] {
    return std::vector<SummaryField>{{"spectral_gap", spectral_gap(*schedule)},
                                     {"mixing_period_rounds", static_cast<double>(schedule->rounds.size())}};
  };
  run.replay_refusal = "a rank waits for its neighbours only, so ranks drift apart by whole steps";
  return run;
}

}  // namespace

AlgorithmInfo neighbor_averaging_entry() {
  std::vector<ParamSpec> params = graph_param_specs();
  params.push_back(
      ParamSpec("rounds", ParamKind::integer, "1", "mixing rounds per step (same vectors, repeated)")
          .between(1, 10000));
  params.push_back(
      ParamSpec("asynchronous", ParamKind::boolean, "false", "no waiting for neighbours' current models"));
  params.push_back(ParamSpec("staleness", ParamKind::integer, "1",
                             "asynchronous: a neighbour's model may be at most this many steps old")
                       .between(0, 1 << 30));
  AlgorithmInfo info;
  info.name = "neighbor_averaging";
  info.messages_per_rank_step = [](int p) { return 2 * log2_rounds(p); };
  info.summary = "average full models with graph neighbours (weights W, doubly stochastic)";
  info.params = params;
  info.reduces_in_flight = false;  // whole dense models travel
  info.consensus = false;          // ranks approach the average, they do not all hold it
  info.collective = CollectiveKind::neighbor_exchange;
  info.prepare = prepare_neighbor_averaging;
  return info;
}

}  // namespace aggsim
