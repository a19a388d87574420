// GossipGraD (Daily et al., arXiv:1803.05880; torchdistx's gossip_grad hook). Ranks form local
// subgroups (the ranks of one node, or consecutive blocks of `group_size`). Each step:
//   1. ring all-reduce (average) inside the subgroup;
//   2. the subgroup's first rank (its leader) gossips with one other leader: it sends its model to
//      the schedule's send partner, receives one from the receive partner and keeps the average of
//      the two (DISSEMINATION or CUBE over a virtual topology of subgroups, power 2^(t mod log n),
//      topology reshuffled every log n steps when `shuffle` is on). CUBE on an even number of
//      subgroups that is not a power of two follows torchdistx: a leader whose partner i xor 2^k is
//      past the last subgroup skips that step's exchange (counted in summary.json as
//      gossip_exchanges_skipped); an odd number of subgroups is refused, as torchdistx refuses it;
//   3. the leader broadcasts the result to its subgroup (binomial tree), so members stay equal.
// Per step a leader sends one model across the fabric whatever the number of ranks: O(1) messages
// per rank, where an all-reduce needs O(p) steps or O(log p) rounds.
//
// Asynchronous variant: a leader posts its send and the receive of the step and moves on; it folds
// in every partner model that has arrived and blocks only for those due `staleness` steps ago.
// Subgroups stay synchronous (intra-node links). Outstanding messages are received at the end.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <deque>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "algorithms/collectives/allreduce.hpp"
#include "algorithms/collectives/blocks.hpp"
#include "algorithms/decentralized/averaging.hpp"
#include "algorithms/decentralized/gossip_schedule.hpp"
#include "algorithms/registry.hpp"

namespace aggsim {

namespace {

constexpr int kGossipChannel = 5;

struct Options {
  GossipSchedule schedule = GossipSchedule::dissemination;
  int group_size = 0;  // 0: by node
  bool shuffle = true;
  bool asynchronous = false;
  int staleness = 1;
};

Options options_of(const Params& p) {
  Options o;
  o.schedule = p.text("schedule") == "cube" ? GossipSchedule::cube : GossipSchedule::dissemination;
  o.group_size = static_cast<int>(p.integer("group_size"));
  o.shuffle = p.boolean("shuffle");
  o.asynchronous = p.boolean("asynchronous");
  o.staleness = static_cast<int>(p.integer("staleness"));
  return o;
}

// Subgroups and virtual topologies, the same for every rank of a run: built once, shared.
class GossipLayout {
 public:
  GossipLayout(const Options& o, std::uint64_t seed) : options_(o), seed_(seed) {}

  void ensure_groups(const RankContext& ctx) {
    if (!group_of_rank_.empty()) return;
    group_of_rank_.resize(static_cast<std::size_t>(ctx.world));
    for (int r = 0; r < ctx.world; ++r)
      group_of_rank_[static_cast<std::size_t>(r)] =
          options_.group_size > 0 ? r / options_.group_size
                                  : ctx.layout->node_of_rank[static_cast<std::size_t>(r)];
    int groups = 0;
    for (int g : group_of_rank_) groups = std::max(groups, g + 1);
    members_.resize(static_cast<std::size_t>(groups));
    for (int r = 0; r < ctx.world; ++r)
      members_[static_cast<std::size_t>(group_of_rank_[static_cast<std::size_t>(r)])].push_back(r);
  }

  Group local_group(int rank) const {
    Group g(members_[static_cast<std::size_t>(group_of_rank_[static_cast<std::size_t>(rank)])]);
    g.me = g.index_of(rank);
    return g;
  }
  int group_of(int rank) const { return group_of_rank_[static_cast<std::size_t>(rank)]; }
  int groups() const { return static_cast<int>(members_.size()); }
  int leader(int group) const { return members_[static_cast<std::size_t>(group)].front(); }

  // Exchanges a leader skipped because its CUBE partner is past the last subgroup.
  void count_skipped() { ++skipped_; }
  std::int64_t skipped() const { return skipped_; }

  // Leaders of the send and receive partners of `group` at `step`; -1 when it sits out.
  std::pair<int, int> partners(int group, std::int64_t step) {
    const int n = groups();
    const std::int64_t period_index = step / gossip_period(n);
    auto it = topologies_.find(period_index);
    if (it == topologies_.end()) {
      const std::vector<int> order = virtual_topology(n, options_.shuffle, seed_, period_index);
      std::vector<int> position(order.size());
      for (std::size_t i = 0; i < order.size(); ++i)
        position[static_cast<std::size_t>(order[i])] = static_cast<int>(i);
      it = topologies_.emplace(period_index, Topology{order, position}).first;
    }
    const Topology& t = it->second;
    const GossipPeers peers =
        gossip_peers(options_.schedule, t.position[static_cast<std::size_t>(group)], n, step);
    if (peers.send < 0) return {-1, -1};
    return {leader(t.order[static_cast<std::size_t>(peers.send)]),
            leader(t.order[static_cast<std::size_t>(peers.recv)])};
  }

 private:
  struct Topology {
    std::vector<int> order, position;
  };
  Options options_;
  std::uint64_t seed_;
  std::vector<int> group_of_rank_;
  std::vector<std::vector<int>> members_;
  std::map<std::int64_t, Topology> topologies_;
  std::int64_t skipped_ = 0;
};

class GossipGrad final : public Aggregator {
 public:
  GossipGrad(std::shared_ptr<GossipLayout> layout, const Options& options, float scale)
      : layout_(std::move(layout)), options_(options), scale_(scale) {}

  void aggregate(RankContext& ctx, Gradient& grad) override {
    layout_->ensure_groups(ctx);
    const Group local = layout_->local_group(ctx.rank);
    ring_allreduce(*ctx.comm, local, grad, ReduceOp{ReduceKind::avg}, local.size());
    if (local.me == 0) gossip(ctx, grad);
    binomial_broadcast(*ctx.comm, local, grad, whole_of(grad), 0);
    if (scale_ != 1.0f) grad.values *= scale_;
  }

  void finish(RankContext& /*ctx*/) override {
    for (auto& r : pending_) r.handle.wait();
    pending_.clear();
    reap_sends(sends_, true);
  }

 private:
  struct PendingRecv {
    std::int64_t step;
    RecvHandle handle;
  };

  void gossip(RankContext& ctx, Gradient& grad) {
    const auto [send_to, recv_from] = layout_->partners(layout_->group_of(ctx.rank), ctx.step);
    if (send_to < 0 && layout_->groups() > 1) layout_->count_skipped();
    if (!options_.asynchronous) {
      if (send_to < 0) return;
      const Payload in = ctx.comm->sendrecv(send_to, model_payload(grad), recv_from, kGossipChannel);
      charge_reduce(*ctx.comm, in.wire_bytes);
      grad.values = 0.5f * (grad.values + in.values);
      return;
    }
    if (send_to >= 0) {
      pending_.push_back({ctx.step, ctx.comm->irecv(recv_from, kGossipChannel)});
      sends_.push_back(ctx.comm->isend(send_to, model_payload(grad, ctx.step), kGossipChannel));
    }
    // Fold in, oldest first, what has arrived and what is due; later ones stay posted.
    while (!pending_.empty() &&
           (pending_.front().handle.done() || pending_.front().step <= ctx.step - options_.staleness)) {
      const Payload in = pending_.front().handle.wait();
      charge_reduce(*ctx.comm, in.wire_bytes);
      pending_.pop_front();
      grad.values = 0.5f * (grad.values + in.values);
    }
    reap_sends(sends_, false);
  }

  std::shared_ptr<GossipLayout> layout_;
  Options options_;
  float scale_;
  std::deque<PendingRecv> pending_;
  std::deque<SendHandle> sends_;
};

// CUBE pairs position i with i xor 2^k. torchdistx refuses an odd number of nodes for it (its
// GossipGraDState: "doesn't support uneven number of nodes for CUBE topology") and runs any even
// number, a node whose partner is past the last one sitting that step out. Subgroups by node are
// known once the platform is (config.layout()), so that check runs when the run is prepared, for
// `validate` as for `run`.
void check_cube_subgroups(const AlgorithmConfig& cfg, const Options& o) {
  if (o.schedule != GossipSchedule::cube) return;
  int groups = 0;
  std::string how;
  if (o.group_size > 0) {
    groups = cfg.world / o.group_size;
    how = fmt::format("{} ranks in subgroups of group_size {}", cfg.world, o.group_size);
  } else if (cfg.layout() && !cfg.layout()->node_of_rank.empty()) {
    std::set<int> nodes(cfg.layout()->node_of_rank.begin(), cfg.layout()->node_of_rank.end());
    groups = static_cast<int>(nodes.size());
    how = fmt::format("the ranks of each of {} nodes (group_size 0)", groups);
  } else {
    return;  // nodes are not known before the platform is built
  }
  if (groups % 2 == 0) return;
  std::vector<std::string> sizes;  // group sizes that give an even number of subgroups
  for (int g = 1; g < cfg.world && sizes.size() < 6; ++g)
    if (cfg.world % g == 0 && (cfg.world / g) % 2 == 0)
      sizes.push_back(fmt::format("{} ({} subgroups)", g, cfg.world / g));
  throw ParamError(
      "schedule",
      fmt::format(
          "gossipgrad: schedule cube needs an even number of subgroups, as torchdistx's, got {} ({}): "
          "cube pairs subgroup i with i xor 2^k. Use schedule: dissemination (any number of "
          "subgroups){}",
          groups, how,
          sizes.empty()
              ? std::string()
              : fmt::format(", or a group_size giving an even number: {}", fmt::join(sizes, ", "))));
}

// Checks the options, builds the gossip layout once for every rank.
AlgorithmRun prepare(const AlgorithmConfig& cfg) {
  check_averaging_scheme(cfg, "gossipgrad");
  const Options o = options_of(cfg.params);
  if (o.group_size > 0 && cfg.world % o.group_size != 0)
    throw ParamError("group_size",
                     fmt::format("{} ranks do not split into subgroups of {}", cfg.world, o.group_size));
  check_cube_subgroups(cfg, o);
  auto layout = std::make_shared<GossipLayout>(o, cfg.seed);
  const float scale = averaging_scale(cfg.op, cfg.world);
  AlgorithmRun run{[layout, o, scale] { return std::make_unique<GossipGrad>(layout, o, scale); }};
  run.replay_refusal = "a rank waits for its partners only, so ranks drift apart by whole steps";
  if (o.schedule == GossipSchedule::cube)
    run.summary_fields = [layout] {
      return std::vector<SummaryField>{{"gossip_exchanges_skipped", static_cast<double>(layout->skipped())}};
    };
  return run;
}

}  // namespace

AlgorithmInfo gossipgrad_entry() {
  AlgorithmInfo info;
  info.name = "gossipgrad";
  info.messages_per_rank_step = [](int p) { return 2 * log2_rounds(p); };
  info.summary =
      "GossipGraD: subgroup all-reduce, one gossip exchange per step (dissemination | cube), broadcast";
  info.params = {
      ParamSpec("schedule", ParamKind::choice, "dissemination", "partner schedule over the virtual topology")
          .one_of({"dissemination", "cube"}),
      ParamSpec("group_size", ParamKind::integer, "0", "ranks per local subgroup (0: the ranks of one node)")
          .between(0, 1 << 22),
      ParamSpec("shuffle", ParamKind::boolean, "true",
                "reshuffle the virtual topology every log2(n) steps (seeded)"),
      ParamSpec("asynchronous", ParamKind::boolean, "false",
                "leaders do not wait for the partner model of the step"),
      ParamSpec("staleness", ParamKind::integer, "1",
                "asynchronous: a partner model may be at most this many steps late")
          .between(0, 1 << 30)};
  info.reduces_in_flight = false;  // no compressor rides it (rejected when the scenario loads)
  info.consensus = false;
  info.collective = CollectiveKind::neighbor_exchange;
  info.prepare = prepare;
  return info;
}

}  // namespace aggsim
