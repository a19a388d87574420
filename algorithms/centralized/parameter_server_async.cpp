// Asynchronous parameter server with bounded staleness (stale-synchronous parallel, Ho et al.,
// NIPS'13). No barrier: a worker pushes its compressed shards and waits for its pulls; a server
// applies each push as it arrives and answers the pusher with everything applied since that
// worker's previous pull (the op-reduction of those updates, finalized like one round: avg divides
// by the number of workers). A worker that adds these deltas to its model therefore holds the
// server's model as of its pull. A worker's clock is the number of its pushes applied; its pull is
// held back while its clock leads the slowest worker's by more than `staleness` (tau), so no
// worker computes on a model missing more than tau rounds of anyone's updates; tau = 0 is lockstep.
// Workers end by telling each server they will push no more; servers serve until all have (in
// finish()), so every push is received. Dedicated servers serve only in finish() and end every
// step with `grad` zeroed. Assumes a commutative, associative op.
#include <algorithm>
#include <optional>

#include "algorithms/centralized/parameter_server.hpp"

namespace aggsim {
namespace {

class AsyncParameterServer final : public Aggregator {
 public:
  AsyncParameterServer(const AlgorithmConfig& cfg, const PsOptions& o)
      : op_(cfg.op),
        roles_{cfg.world, o.servers, o.dedicated},
        tau_(o.staleness),
        compressor_(cfg.make_compressor()),
        stats_(o.stats) {
    const auto w = static_cast<std::size_t>(roles_.workers());
    clock_.assign(w, 0);
    pending_.resize(w);
    pending_count_.assign(w, 0);
    deferred_.assign(w, false);
  }

  void aggregate(RankContext& ctx, Gradient& grad) override {
    const int servers = roles_.servers, me = ctx.rank;
    if (roles_.is_server(me)) shard_ = shard_of(grad, servers, me);
    post_inbox(ctx);
    if (!roles_.is_worker(me)) {
      grad.values.setZero();
      return;
    }
    Comm& comm = *ctx.comm;
    Comm::wait_all(pushes_);
    pushes_.clear();
    for (int s = 0; s < servers; ++s)
      if (s != me) recvs_[static_cast<std::size_t>(s)] = comm.irecv(s, kPullChannel);
    for (int s = 0; s < servers; ++s) {
      Payload push = push_payload(ctx, *compressor_, grad, shard_of(grad, servers, s));
      if (s == me)
        apply(ctx, roles_.worker_index(me), push);
      else
        pushes_.push_back(comm.isend(s, std::move(push), kPushChannel));
    }
    // Wait for every shard's reply; a colocated server keeps serving meanwhile, since others'
    // replies, and perhaps its own, wait for pushes it has yet to apply.
    int remote_missing = roles_.is_server(me) ? servers - 1 : servers;
    bool own_done = !roles_.is_server(me);
    const auto take_own = [&] {
      if (!own_reply_) return;
      grad.values.segment(shard_.view.proxy.begin, shard_.view.proxy.count) = *own_reply_;
      own_reply_.reset();
      own_done = true;
    };
    take_own();
    while (remote_missing > 0 || !own_done) {
      const std::size_t i = Comm::wait_any(recvs_);
      Payload msg = recvs_[i].wait();
      if (i < static_cast<std::size_t>(servers)) {
        const ChunkView shard = chunk_of(grad, servers, static_cast<int>(i));
        grad.values.segment(shard.proxy.begin, shard.proxy.count) = msg.values;
        --remote_missing;
      } else {
        serve(ctx, i, msg);
        take_own();
      }
    }
  }

  void finish(RankContext& ctx) override {
    post_inbox(ctx);
    Comm& comm = *ctx.comm;
    if (roles_.is_worker(ctx.rank)) {
      Comm::wait_all(pushes_);
      pushes_.clear();
      Payload last;
      last.tag = kLastPush;
      for (int s = 0; s < roles_.servers; ++s)
        if (s != ctx.rank) pushes_.push_back(comm.isend(s, last, kPushChannel));
      if (roles_.is_server(ctx.rank)) ++finished_workers_;
    }
    if (roles_.is_server(ctx.rank)) {
      while (finished_workers_ < roles_.workers()) {
        const std::size_t i = Comm::wait_any(recvs_);
        serve(ctx, i, recvs_[i].wait());
      }
    }
    Comm::wait_all(replies_);
    Comm::wait_all(pushes_);
  }

 private:
  // recvs_ holds this worker's pulls [0, servers), then one posted push receive per worker.
  void post_inbox(RankContext& ctx) {
    if (!recvs_.empty()) return;
    recvs_.resize(static_cast<std::size_t>(roles_.servers + roles_.workers()));
    if (!roles_.is_server(ctx.rank)) return;
    for (int w = 0; w < roles_.workers(); ++w)
      if (roles_.worker_rank(w) != ctx.rank) inbox(w) = ctx.comm->irecv(roles_.worker_rank(w), kPushChannel);
  }
  RecvHandle& inbox(int worker) { return recvs_[static_cast<std::size_t>(roles_.servers + worker)]; }

  // A message from worker slot `i` of recvs_: a push to apply, or the worker's last word.
  void serve(RankContext& ctx, std::size_t i, const Payload& msg) {
    const int worker = static_cast<int>(i) - roles_.servers;
    if (msg.tag == kLastPush) {
      ++finished_workers_;
      return;
    }
    inbox(worker) = ctx.comm->irecv(roles_.worker_rank(worker), kPushChannel);
    apply(ctx, worker, msg);
  }

  void apply(RankContext& ctx, int worker, const Payload& push) {
    const Eigen::VectorXf g = decode_push(ctx, *compressor_, push, shard_);
    // The push is added to the model once (the per-worker pending sums are bookkeeping).
    charge_reduce(*ctx.comm, shard_bytes(shard_));
    for (std::size_t u = 0; u < pending_.size(); ++u) {
      if (pending_count_[u]++ == 0)
        pending_[u] = g;
      else
        op_.combine(pending_[u], g);
    }
    const auto w = static_cast<std::size_t>(worker);
    ++clock_[w];
    deferred_[w] = true;
    if (clock_[w] - *std::min_element(clock_.begin(), clock_.end()) > tau_) ++stats_->deferred_pulls;
    release(ctx);
  }

  // Answers every waiting worker that leads the slowest by at most tau.
  void release(RankContext& ctx) {
    const std::int64_t slowest = *std::min_element(clock_.begin(), clock_.end());
    ParameterServerStats& stats = *stats_;
    for (std::size_t u = 0; u < deferred_.size(); ++u) {
      const std::int64_t lead = clock_[u] - slowest;
      if (!deferred_[u] || lead > tau_) continue;
      stats.max_staleness = std::max(stats.max_staleness, static_cast<int>(lead));
      Eigen::VectorXf delta = std::move(pending_[u]);
      op_.finalize(delta, roles_.workers());
      pending_count_[u] = 0;
      deferred_[u] = false;
      const int rank = roles_.worker_rank(static_cast<int>(u));
      if (rank == ctx.rank)
        own_reply_ = std::move(delta);
      else
        replies_.push_back(ctx.comm->isend(rank, pull_payload(delta, shard_), kPullChannel));
    }
  }

  ReduceOp op_;
  PsRoles roles_;
  std::int64_t tau_;
  std::unique_ptr<Compressor> compressor_;
  // Worker side.
  std::vector<SendHandle> pushes_;
  std::optional<Eigen::VectorXf> own_reply_;  // colocated: my own shard's reply
  // Server side (shard_ is mine), one entry per worker.
  Shard shard_;
  std::vector<RecvHandle> recvs_;
  std::vector<std::int64_t> clock_;       // pushes applied
  std::vector<Eigen::VectorXf> pending_;  // reduction of the updates applied since its last pull
  std::vector<int> pending_count_;
  std::vector<bool> deferred_;  // pushed, not yet answered
  std::vector<SendHandle> replies_;
  int finished_workers_ = 0;
  std::shared_ptr<ParameterServerStats> stats_;
};

}  // namespace

std::unique_ptr<Aggregator> make_async_parameter_server(const AlgorithmConfig& cfg,
                                                        const PsOptions& options) {
  return std::make_unique<AsyncParameterServer>(cfg, options);
}

}  // namespace aggsim
