// NCCL's PAT schedule (pat_schedule.hpp): the steps every rank walks, the reduction they imply, and
// the pipeline's own time they take.
#include "algorithms/nccl/pat_schedule.hpp"

#include <algorithm>
#include <cmath>
#include <deque>
#include <queue>
#include <unordered_map>
#include <stdexcept>

#include "algorithms/nccl/ring_shards.hpp"

namespace aggsim {

namespace {

int lowest_bit_index(int u) {
  int d = 0;
  while (((u >> d) & 1) == 0) ++d;
  return d;
}

// The order NCCL visits the `count` members of a group (a power of two): bit-reversed from the last,
// so that consecutive steps go to far-apart nodes (NCCL's mirrorInvert).
int mirrored(int i, int count) {
  int out = 0;
  for (int bit = 1, weight = count / 2; bit < count; bit <<= 1, weight >>= 1)
    if ((i & bit) == 0) out += weight;
  return out;
}

// The step in which node u receives child c (c >= ranks: no piece arrives, but the node may still
// complete and send); u sends its partial once its distance-1 child is in.
void add_child_step(std::vector<PatStep>& steps, int u, int c, int ranks) {
  if (u >= ranks) return;
  PatStep s;
  s.node = u;
  if (c < ranks) {
    s.child = c;
    s.recv_dim = lowest_bit_index(c - u);
  }
  if (c == u + 1 && u != 0) s.send_dim = lowest_bit_index(u);
  steps.push_back(s);
}

}  // namespace

bool pat_reduces(const ReduceOp& op) {
  return op.kind != ReduceKind::avg && op.kind != ReduceKind::custom_avg;
}

NcclSystem pat_for_op(NcclSystem system, NcclCollective collective, bool op_reduces) {
  if (collective == NcclCollective::reduce_scatter && !op_reduces) system.pat = false;
  return system;
}

int pat_aggregation(int ranks, double chunk_bytes, double part_bytes) {
  int agg = 1;
  const double part = std::max(1.0, part_bytes);
  while (std::floor(chunk_bytes / (part * agg)) >= 2 && agg < ranks / 2) agg *= 2;
  for (int depth = 8; depth > 1 && agg < ranks / 2; depth /= 2) agg *= 2;  // NCCL_STEPS
  return agg;
}

std::vector<PatStep> pat_reduce_scatter_steps(int ranks, int agg) {
  int pow2 = 1;
  while (pow2 < ranks) pow2 *= 2;
  const int delta = pow2 / agg;  // distances below it are walked group by group
  std::vector<PatStep> steps;
  for (int group = delta - 1; group >= 1; --group) {
    if (group % 2 == 1)  // leaves (odd offsets) send their input
      for (int a = 0; a < agg; ++a) {
        const int u = mirrored(a, agg) * delta + group;
        if (u < ranks) steps.push_back({u, -1, -1, 0});
      }
    if (group == 1) break;
    for (int a = 0; a < agg; ++a) {
      const int c = mirrored(a, agg) * delta + group;
      add_child_step(steps, c - (1 << lowest_bit_index(c)), c, ranks);
    }
  }
  // Nodes on multiples of delta: their distance-1 child, then the children at delta and above,
  // distance by distance upwards.
  for (int scale = 1; scale < agg; scale *= 2) {
    const int count = agg / (2 * scale);
    for (int a = 0; a < count; ++a) {
      const int u = (2 * mirrored(a, count) + 1) * scale * delta;
      add_child_step(steps, u, u + 1, ranks);
    }
    for (int a = 0; a < count; ++a) {
      const int c = (2 * mirrored(a, count) + 1) * scale * delta;
      add_child_step(steps, c - (1 << lowest_bit_index(c)), c, ranks);
    }
  }
  add_child_step(steps, 0, 1, ranks);
  return steps;
}

std::vector<PatStep> pat_all_gather_steps(int ranks, int agg) {
  std::vector<PatStep> steps = pat_reduce_scatter_steps(ranks, agg);
  std::reverse(steps.begin(), steps.end());
  for (PatStep& s : steps) std::swap(s.recv_dim, s.send_dim);
  return steps;
}

std::vector<PatStep> pat_steps(NcclCollective collective, int ranks, int agg) {
  if (collective == NcclCollective::reduce_scatter) return pat_reduce_scatter_steps(ranks, agg);
  if (collective == NcclCollective::all_gather) return pat_all_gather_steps(ranks, agg);
  throw std::logic_error("PAT runs reduce-scatter and all-gather only");
}

int pat_peer(NcclCollective collective, int rank, int dim, bool sending, int ranks) {
  const bool up = (collective == NcclCollective::reduce_scatter) == sending;
  const int distance = (1 << dim) % ranks;
  return up ? (rank + distance) % ranks : (rank - distance + ranks) % ranks;
}

double pat_chunk_bytes(NcclCollective collective, double channel_bytes) {
  double chunk = 512.0 * 1024;  // Simple's buffer (4 MiB) over NCCL_STEPS (8)
  const double parts = collective == NcclCollective::all_gather ? 32 : 16;
  while (chunk * parts > channel_bytes && chunk > 65536) chunk /= 2;
  return chunk;
}

Range pat_piece(std::int64_t n, int ranks, int owner, int channels, int loops, int channel, int loop) {
  const Range shard = nccl_shard(n, ranks, owner);
  const Range part = chunk_range(shard.count, channels, channel);
  const Range piece = chunk_range(part.count, loops, loop);
  return {shard.begin + part.begin + piece.begin, piece.count};
}

Eigen::VectorXf nccl_pat_reduce_scatter(int agg, const std::vector<const Eigen::VectorXf*>& inputs,
                                        const ReduceOp& reduce_op, int world, WireDtype dtype) {
  const NcclOp op(reduce_op, world, dtype);
  const int n = static_cast<int>(inputs.size());
  const std::int64_t size = inputs.front()->size();
  std::vector<std::vector<int>> children(static_cast<std::size_t>(n));
  for (const PatStep& s : pat_reduce_scatter_steps(n, agg))
    if (s.child >= 0) children[static_cast<std::size_t>(s.node)].push_back(s.child);
  Eigen::VectorXf out = Eigen::VectorXf::Zero(size);
  for (int t = 0; t < n; ++t) {
    const Range r = nccl_shard(size, n, t);
    if (r.count == 0) continue;
    const std::function<Eigen::VectorXf(int)> partial = [&](int u) {
      Eigen::VectorXf acc(r.count);
      op.load(acc, inputs[static_cast<std::size_t>(((t - u) % n + n) % n)]->segment(r.begin, r.count));
      for (int c : children[static_cast<std::size_t>(u)]) op.combine(acc, partial(c));
      return acc;
    };
    out.segment(r.begin, r.count) = partial(0);
  }
  return out;
}

namespace {

// PAT's pieces in flight as a fluid: a member's pieces leaving at once share its way out, those
// arriving at once its way in (max-min: a piece slower by its own edge leaves the rest to the others;
// a member's way is as fast as its fastest edge), each connection's pieces one after another, as
// SimGrid shares a link among the chunk level's messages.
class PatFluid {
 public:
  PatFluid(NcclCollective collective, const std::vector<PatStep>& steps, int ranks, int loops, int slots,
           const std::function<PatHop(int, int)>& hop, const std::function<double(int, int, int)>& piece_bytes)
      : collective_(collective), steps_(steps), n_(ranks), loops_(loops), slots_(slots), bytes_(piece_bytes) {
    for (const PatStep& s : steps) dims_ = std::max({dims_, s.recv_dim + 1, s.send_dim + 1});
    const auto connections = static_cast<std::size_t>(n_ * dims_);
    conn_.resize(connections);
    for (int r = 0; r < n_; ++r)
      for (int d = 0; d < dims_; ++d) {
        Connection& c = conn_[index(r, d)];
        c.to = pat_peer(collective, r, d, true, n_);
        c.hop = hop(r, d);
      }
    next_.assign(static_cast<std::size_t>(n_), 0);
    taken_.assign(static_cast<std::size_t>(n_), 0);
  }

  double run() {
    for (int r = 0; r < n_; ++r) walk(r, 0);
    while (!events_.empty()) {
      const Event e = events_.top();
      events_.pop();
      if (e.piece >= 0) {
        if (pieces_[static_cast<std::size_t>(e.piece)].version == e.version) complete(e.piece, e.time);
      } else {
        walk(e.rank, e.time);
      }
    }
    const std::int64_t total = static_cast<std::int64_t>(steps_.size()) * loops_;
    for (std::int64_t at : next_)
      if (at < total) throw std::logic_error("PAT's steps wait on a piece no rank sends");
    return end_;
  }

 private:
  struct Connection {
    int to = 0;
    PatHop hop;
    std::deque<double> queued;  // bytes of pieces waiting to leave
    int active = -1;            // the piece leaving, if any
    int occupied = 0;           // FIFO slots taken: queued and leaving
    bool sender_waits = false;  // the sender waits for a slot
    std::deque<double> usable;  // when each piece that left may be used, in order
    bool receiver_waits = false;
  };
  struct Piece {
    int connection = 0;
    double remaining = 0, rate = 0, since = 0;
    int version = 0;
  };
  struct Event {
    double time;
    int piece, version, rank;
    bool operator<(const Event& o) const { return time > o.time; }
  };

  std::size_t index(int r, int d) const { return static_cast<std::size_t>(r * dims_ + d); }
  int sender(const Piece& p) const { return p.connection / dims_; }

  // Member r goes through its steps at time t until one waits.
  void walk(int r, double t) {
    const std::int64_t total = static_cast<std::int64_t>(steps_.size()) * loops_;
    auto& at = next_[static_cast<std::size_t>(r)];
    auto& taken = taken_[static_cast<std::size_t>(r)];  // the step's piece is already in
    for (; at < total; ++at, taken = 0) {
      const PatStep& s = steps_[static_cast<std::size_t>(at % static_cast<std::int64_t>(steps_.size()))];
      if (s.recv_dim >= 0 && !taken) {
        Connection& c = conn_[index(pat_peer(collective_, r, s.recv_dim, false, n_), s.recv_dim)];
        if (c.usable.empty()) {
          c.receiver_waits = true;
          return;
        }
        if (c.usable.front() > t) {
          events_.push({c.usable.front(), -1, 0, r});
          return;
        }
        c.usable.pop_front();
        taken = 1;
      }
      if (s.send_dim >= 0) {
        Connection& c = conn_[index(r, s.send_dim)];
        if (c.occupied >= slots_) {
          c.sender_waits = true;
          return;
        }
        ++c.occupied;
        c.queued.push_back(bytes_(r, s.node, static_cast<int>(at / static_cast<std::int64_t>(steps_.size()))));
        if (c.active < 0) start(static_cast<int>(index(r, s.send_dim)), t);
      }
      end_ = std::max(end_, t);
    }
  }

  void start(int connection, double t) {
    Connection& c = conn_[static_cast<std::size_t>(connection)];
    c.active = static_cast<int>(pieces_.size());
    pieces_.push_back({connection, c.queued.front(), 0, t, 0});
    c.queued.pop_front();
    on_link_[c.hop.out_link].push_back(c.active);
    if (c.hop.in_link != c.hop.out_link) on_link_[c.hop.in_link].push_back(c.active);
    share(c.hop, t);
  }

  // `capacity` shared max-min among the pieces `ids` (each at most its edge's rate): piece id's share.
  double fill(const std::vector<int>& ids, double capacity, int id) const {
    std::vector<double> caps;
    for (int other : ids)
      caps.push_back(1 / conn_[static_cast<std::size_t>(pieces_[static_cast<std::size_t>(other)].connection)]
                             .hop.seconds_per_byte);
    const double mine = 1 / conn_[static_cast<std::size_t>(pieces_[static_cast<std::size_t>(id)].connection)]
                                .hop.seconds_per_byte;
    std::sort(caps.begin(), caps.end());
    double left = capacity;
    for (std::size_t i = 0; i < caps.size(); ++i) {
      const double share = left / static_cast<double>(caps.size() - i);
      if (caps[i] >= share) return std::min(mine, share);
      left -= caps[i];
    }
    return mine;
  }

  // New rates for every piece on the first or last link of `hop`'s way.
  void share(const PatHop& hop, double t) {
    const std::vector<int> touched_out = on_link_[hop.out_link], touched_in = on_link_[hop.in_link];
    for (const auto* list : {&touched_out, &touched_in})
      for (int id : *list) {
        Piece& p = pieces_[static_cast<std::size_t>(id)];
        const PatHop& h = conn_[static_cast<std::size_t>(p.connection)].hop;
        p.remaining = std::max(0.0, p.remaining - p.rate * (t - p.since));
        p.since = t;
        p.rate = std::min(fill(on_link_[h.out_link], h.out_rate, id), fill(on_link_[h.in_link], h.in_rate, id));
        events_.push({t + p.remaining / p.rate, id, ++p.version, 0});
      }
  }

  void complete(int id, double t) {
    Piece& p = pieces_[static_cast<std::size_t>(id)];
    p.version = -1;
    const int from = sender(p);
    Connection& c = conn_[static_cast<std::size_t>(p.connection)];
    for (auto* list : {&on_link_[c.hop.out_link], &on_link_[c.hop.in_link]}) {
      const auto at = std::find(list->begin(), list->end(), id);
      if (at != list->end()) list->erase(at);
    }
    share(c.hop, t);
    c.usable.push_back(t + c.hop.delay);
    end_ = std::max(end_, t + c.hop.delay);
    c.active = -1;
    --c.occupied;
    if (!c.queued.empty()) start(p.connection, t);
    if (c.receiver_waits) {
      c.receiver_waits = false;
      events_.push({t + c.hop.delay, -1, 0, c.to});
    }
    if (c.sender_waits) {
      c.sender_waits = false;
      walk(from, t);
    }
  }

  NcclCollective collective_;
  const std::vector<PatStep>& steps_;
  int n_, loops_, slots_, dims_ = 0;
  std::function<double(int, int, int)> bytes_;
  std::vector<Connection> conn_;
  std::vector<std::int64_t> next_;
  std::vector<char> taken_;
  std::unordered_map<const void*, std::vector<int>> on_link_;  // the pieces on each first or last link
  std::vector<Piece> pieces_;
  std::priority_queue<Event> events_;
  double end_ = 0;
};

}  // namespace

double pat_pipeline_time(NcclCollective collective, const std::vector<PatStep>& steps, int ranks, int loops,
                         int slots, const std::function<PatHop(int, int)>& hop,
                         const std::function<double(int, int, int)>& piece_bytes) {
  return PatFluid(collective, steps, ranks, loops, slots, hop, piece_bytes).run();
}

}  // namespace aggsim
