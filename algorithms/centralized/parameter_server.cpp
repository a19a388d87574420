// Synchronous parameter server with S shards (Li et al., OSDI'14; ATOMO's PS with num-aggregate).
// The gradient's elements (both planes, chunked as the collectives chunk them) are split into S
// contiguous shards; rank s < S serves shard s. Each step every worker compresses each shard with
// the scenario's compressor and pushes it to its server; a server decodes the first k pushes to
// arrive, reduces them with the op (avg divides by the number reduced), and sends the dense fp32
// result back to every worker, which copies it: every worker ends the step with the server's bits.
// With `pull: broadcast` the result goes down a binomial tree rooted at the server instead, the
// workers forwarding it, so the server's link carries ceil(log2(members)) copies instead of one per
// worker; every rank joins the S trees in shard order (sends block, so one order everywhere).
// Pushes that arrive after the k-th (backup workers, stragglers) are received and dropped, at the
// next step or in finish(), so nothing is left unreceived. A colocated server's own push and pull
// are local and cost nothing on the network. Dedicated servers contribute no gradient; their
// `grad` ends holding their shard of the result and zeros elsewhere.
// Assumes a commutative, associative op (the reduction order is the arrival order).
#include "algorithms/centralized/parameter_server.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <stdexcept>

#include "algorithms/collectives/blocks.hpp"
#include "sim/core/strings.hpp"

namespace aggsim {

Shard shard_of(const Gradient& grad, int servers, int s) {
  const ChunkView view = chunk_of(grad, servers, s);
  // The shard's modeled pieces are those of the gradient it cuts out, so compressors see the layer
  // shapes; the math runs on the flat proxy slice (no tensor structure: a shard may cut a tensor).
  return {view, TensorDesc{{view.proxy.count, 1},
                           grad.wire_shape.slice(view.wire.begin, view.wire.count),
                           static_cast<std::uint64_t>(s),
                           {}}};
}

Payload push_payload(RankContext& ctx, Compressor& compressor, const Gradient& grad, const Shard& shard) {
  Payload p = compress_on_rank(
      ctx, compressor, grad.values.segment(shard.view.proxy.begin, shard.view.proxy.count), shard.tensor);
  p.tag = ctx.step;
  return p;
}

Eigen::VectorXf decode_push(RankContext& ctx, const Compressor& compressor, const Payload& push,
                            const Shard& shard) {
  charge_decode(ctx, compressor, shard.tensor);
  return compressor.decompress(push, shard.tensor);
}

std::uint64_t shard_bytes(const Shard& shard) {
  return static_cast<std::uint64_t>(shard.view.wire.count) * kFloatBytes;
}

Payload pull_payload(const Eigen::VectorXf& values, const Shard& shard) {
  Payload p;
  p.values = values;
  p.wire_bytes = shard_bytes(shard);
  return p;
}

namespace {

class SyncParameterServer final : public Aggregator {
 public:
  SyncParameterServer(const AlgorithmConfig& cfg, const PsOptions& o)
      : op_(cfg.op),
        roles_{cfg.world, o.servers, o.dedicated},
        k_(o.aggregate > 0 ? o.aggregate : roles_.workers()),
        broadcast_(o.broadcast_pull),
        compressor_(cfg.make_compressor()),
        stats_(o.stats) {}

  void aggregate(RankContext& ctx, Gradient& grad) override {
    Comm& comm = *ctx.comm;
    const int me = ctx.rank, servers = roles_.servers;
    // A worker's previous pushes (a straggler's may still be on its link) go out first.
    Comm::wait_all(pushes_);
    pushes_.clear();
    std::vector<RecvHandle> pulls(static_cast<std::size_t>(servers));
    std::optional<Payload> own_push;
    if (roles_.is_worker(me)) {
      // Pulls are posted before pushing, so every pull flows as soon as its server sends it.
      for (int s = 0; s < servers && !broadcast_; ++s)
        if (s != me) pulls[static_cast<std::size_t>(s)] = comm.irecv(s, kPullChannel);
      for (int s = 0; s < servers; ++s) {
        Payload push = push_payload(ctx, *compressor_, grad, shard_of(grad, servers, s));
        if (s == me)
          own_push = std::move(push);
        else
          pushes_.push_back(comm.isend(s, std::move(push), kPushChannel));
      }
    }
    if (broadcast_) {
      broadcast_pulls(ctx, grad, own_push);
      return;
    }
    if (roles_.is_server(me)) serve_into(ctx, grad, own_push);
    for (int s = 0; s < servers; ++s) {
      auto& pull = pulls[static_cast<std::size_t>(s)];
      if (!pull.valid()) continue;
      const ChunkView shard = chunk_of(grad, servers, s);
      grad.values.segment(shard.proxy.begin, shard.proxy.count) = pull.wait().values;
    }
  }

  void finish(RankContext&) override {
    Comm::wait_all(pushes_);
    for (auto& late : late_) drop(late.wait());
  }

 private:
  // Serves my shard and leaves its result in `grad` (a dedicated server's other elements zero).
  void serve_into(RankContext& ctx, Gradient& grad, std::optional<Payload>& own_push) {
    const Shard shard = shard_of(grad, roles_.servers, ctx.rank);
    const Eigen::VectorXf result = serve_round(ctx, shard, own_push);
    if (!roles_.is_worker(ctx.rank)) grad.values.setZero();
    grad.values.segment(shard.view.proxy.begin, shard.view.proxy.count) = result;
  }

  // Shard s's result goes down a binomial tree over {server s, the other workers}, rooted at the
  // server. Workers join every tree, a dedicated server only its own, all in shard order.
  void broadcast_pulls(RankContext& ctx, Gradient& grad, std::optional<Payload>& own_push) {
    const int me = ctx.rank;
    for (int s = 0; s < roles_.servers; ++s) {
      if (s != me && !roles_.is_worker(me)) continue;
      if (s == me) serve_into(ctx, grad, own_push);
      Group tree;
      tree.add(s);
      for (int w = 0; w < roles_.workers(); ++w)
        if (roles_.worker_rank(w) != s) tree.add(roles_.worker_rank(w));
      tree.me = tree.index_of(me);
      binomial_broadcast(*ctx.comm, tree, grad, shard_of(grad, roles_.servers, s).view, 0, 1, kPullChannel);
    }
  }

  // Receives this step's pushes for my shard, reduces the first k and (unicast pull) sends the
  // result to every worker. Pushes still in flight stay posted in late_.
  Eigen::VectorXf serve_round(RankContext& ctx, const Shard& shard, std::optional<Payload>& own_push) {
    Comm& comm = *ctx.comm;
    std::vector<RecvHandle> inbox = std::move(late_);
    late_.clear();
    for (int w = 0; w < roles_.workers(); ++w)
      if (roles_.worker_rank(w) != ctx.rank) inbox.push_back(comm.irecv(roles_.worker_rank(w), kPushChannel));
    std::vector<Payload> taken;  // in arrival order; the own push, if any, arrives first
    if (own_push) taken.push_back(std::move(*own_push));
    while (static_cast<int>(taken.size()) < k_) {
      Payload push = inbox[Comm::wait_any(inbox)].wait();
      if (push.tag == ctx.step)
        taken.push_back(std::move(push));
      else
        drop(push);
    }
    for (auto& r : inbox)
      if (r.valid()) late_.push_back(std::move(r));
    // Decode and reduce with the op (the compressor may vote instead, as sign compression does);
    // avg divides by the number of gradients taken.
    // Every push taken is added into the accumulator: k shards of reduction work.
    charge_decode(ctx, *compressor_, shard.tensor, static_cast<int>(taken.size()));
    charge_reduce(*ctx.comm, taken.size() * shard_bytes(shard));
    const Eigen::VectorXf acc = compressor_->reduce(taken, shard.tensor, op_);

    std::vector<SendHandle> sends;
    for (int w = 0; w < roles_.workers() && !broadcast_; ++w)
      if (roles_.worker_rank(w) != ctx.rank)
        sends.push_back(comm.isend(roles_.worker_rank(w), pull_payload(acc, shard), kPullChannel));
    Comm::wait_all(sends);
    return acc;
  }

  void drop(const Payload&) { ++stats_->discarded_pushes; }

  ReduceOp op_;
  PsRoles roles_;
  int k_;
  bool broadcast_;
  std::unique_ptr<Compressor> compressor_;
  std::vector<SendHandle> pushes_;  // worker: pushes not yet known to be delivered
  std::vector<RecvHandle> late_;    // server: pushes that missed their round
  std::shared_ptr<ParameterServerStats> stats_;
};

// The options, checked as a whole; throws ParamError naming the offending key.
PsOptions ps_options(const Params& p, int world) {
  PsOptions o;
  o.servers = static_cast<int>(p.integer("servers"));
  o.dedicated = p.text("placement") == "dedicated";
  o.asynchronous = p.boolean("asynchronous");
  o.staleness = static_cast<int>(p.integer("staleness"));
  if (p.has("aggregate")) o.aggregate = static_cast<int>(p.integer("aggregate"));
  o.broadcast_pull = p.has("pull") && p.text("pull") == "broadcast";
  const PsRoles roles{world, o.servers, o.dedicated};
  if (o.servers > world || (o.dedicated && o.servers >= world))
    throw ParamError("servers", fmt::format("parameter_server: {} {} servers leave no worker among {} ranks "
                                            "(dedicated: ranks = workers + servers)",
                                            o.servers, o.dedicated ? "dedicated" : "colocated", world));
  if (o.aggregate > roles.workers())
    throw ParamError("aggregate", fmt::format("parameter_server: aggregate: {} exceeds the {} workers",
                                              o.aggregate, roles.workers()));
  if (o.asynchronous && o.aggregate > 0)
    throw ParamError("aggregate",
                     "parameter_server: aggregate (k-of-n) applies to the synchronous server only");
  if (o.asynchronous && o.broadcast_pull)
    throw ParamError("pull",
                     "parameter_server: pull: broadcast needs the synchronous server (asynchronous workers "
                     "each pull their own updates since their last pull; use pull: unicast)");
  if (p.has("server_hosts")) {
    o.server_hosts = split_list(p.text("server_hosts"));
    for (std::size_t i = 0; i < o.server_hosts.size(); ++i) {
      const std::string& name = o.server_hosts[i];
      if (name.empty()) throw ParamError("server_hosts", "empty host name in the list");
      for (std::size_t j = 0; j < i; ++j)
        if (o.server_hosts[j] == name)
          throw ParamError("server_hosts", fmt::format("host '{}' is named twice", name));
    }
    if (static_cast<int>(o.server_hosts.size()) != o.servers)
      throw ParamError("server_hosts", fmt::format("{} host names for {} servers (give one per server)",
                                                   o.server_hosts.size(), o.servers));
  }
  return o;
}

}  // namespace

std::unique_ptr<Aggregator> make_sync_parameter_server(const AlgorithmConfig& cfg, const PsOptions& options) {
  return std::make_unique<SyncParameterServer>(cfg, options);
}

AlgorithmInfo parameter_server_entry() {
  AlgorithmInfo info;
  info.name = "parameter_server";
  info.messages_per_rank_step = [](int) { return 2.0; };
  // An asynchronous server serves a bucket's pushes until every worker has sent its last one, and a
  // rank ends its buckets one after the other: with several buckets the workers wait for a bucket
  // whose server has not begun to serve, and the run deadlocks.
  info.layer_granularity_refusal = [](const Params& p) -> std::string {
    if (!(p.has("asynchronous") && p.boolean("asynchronous"))) return "";
    return "layer with asynchronous: true is not modelled (each bucket would be a server of its own, serving "
           "only once the previous one has ended, so the run would deadlock); use granularity: model";
  };
  info.summary =
      "sharded parameter server: push compressed gradients, pull the dense reduction; k-of-n, async";
  info.params = {
      ParamSpec("servers", ParamKind::integer, "1", "shards, served by ranks 0..servers-1")
          .between(1, 1 << 20),
      ParamSpec("server_hosts", ParamKind::text, "",
                "platform hosts of the servers, comma-separated, one per server in shard order; the other "
                "ranks take the remaining hosts in natural order (absent: the first hosts)"),
      ParamSpec(
          "placement", ParamKind::choice, "colocated",
          "colocated: servers are workers too; dedicated: servers only serve (ranks = workers + servers)")
          .one_of({"colocated", "dedicated"}),
      ParamSpec("aggregate", ParamKind::integer, "",
                "k of k-of-n: reduce the first k pushes to arrive, drop the rest (default: all workers)")
          .between(1, 1 << 22),
      ParamSpec("asynchronous", ParamKind::boolean, "false",
                "no global barrier: apply each push as it comes, reply with the updates since the last pull"),
      ParamSpec(
          "staleness", ParamKind::integer, "0",
          "asynchronous: a worker may lead the slowest by at most this many pushes before its pull waits")
          .between(0, 1 << 30),
      ParamSpec("pull", ParamKind::choice, "",
                "how workers get the result (absent: unicast): unicast: the server sends it to each worker; "
                "broadcast: a "
                "binomial tree over the workers rooted at the server (workers forward), synchronous only")
          .one_of({"unicast", "broadcast"})};
  // Decodes every push on the server: any compressor works, summable or not.
  info.reduces_in_flight = false;
  // Ranks do not all end with the same vector: dedicated servers hold only their shard, and
  // asynchronous workers each hold the model as of their own pull.
  info.consensus = false;
  info.collective = CollectiveKind::parameter_server;
  info.prepare = [](const AlgorithmConfig& cfg) {
    const PsOptions o = ps_options(cfg.params, cfg.world);
    AlgorithmRun run;
    run.make_aggregator = [cfg, o] {
      return o.asynchronous ? make_async_parameter_server(cfg, o) : make_sync_parameter_server(cfg, o);
    };
    const PsRoles roles{cfg.world, o.servers, o.dedicated};
    run.contributes = [roles](int rank) { return roles.is_worker(rank); };
    if (o.asynchronous)
      run.replay_refusal = "asynchronous: pushes and pulls follow simulated arrival times";
    else if (o.aggregate > 0 && o.aggregate < roles.workers())
      run.replay_refusal = "aggregate below the worker count: late pushes are received in a later step";
    else
      run.replay_refusal = "";
    run.summary_fields = [stats = o.stats] {
      return std::vector<SummaryField>{{"max_staleness", static_cast<double>(stats->max_staleness)},
                                       {"deferred_pulls", static_cast<double>(stats->deferred_pulls)},
                                       {"discarded_pushes", static_cast<double>(stats->discarded_pushes)}};
    };
    return run;
  };
  info.placement = [](const Params& p) {
    return RankPlacement{"server_hosts", p.has("server_hosts") ? split_list(p.text("server_hosts"))
                                                               : std::vector<std::string>{}};
  };
  return info;
}

}  // namespace aggsim
