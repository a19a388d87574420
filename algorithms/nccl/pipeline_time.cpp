#include "algorithms/nccl/pipeline_time.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>

namespace aggsim {

namespace {

bool same(const PipelineHop& a, const PipelineHop& b) {
  return a.latency == b.latency && a.slice_time == b.slice_time && a.period == b.period;
}

// The smallest d dividing the ring's length with hops[q] == hops[q + d] for every q: members d
// apart then live the same times, so d of them stand for all.
int ring_period(const std::vector<PipelineHop>& hops) {
  const int p = static_cast<int>(hops.size());
  for (int d = 1; d < p; ++d) {
    if (p % d != 0) continue;
    bool repeats = true;
    for (int q = 0; q + d < p && repeats; ++q) repeats = same(hops[q], hops[q + d]);
    if (repeats) return d;
  }
  return p;
}

// The last `size` values of a sequence indexed from 0 (older ones are never read again).
class Recent {
 public:
  explicit Recent(int size) : values_(static_cast<std::size_t>(size), 0.0) {}
  double at(std::int64_t i) const { return values_[static_cast<std::size_t>(i % size())]; }
  void set(std::int64_t i, double v) { values_[static_cast<std::size_t>(i % size())] = v; }

 private:
  std::int64_t size() const { return static_cast<std::int64_t>(values_.size()); }
  std::vector<double> values_;
};

// A connection's sender side: member `clock` puts piece j once piece j - slots has left; it leaves
// after piece j - 1 and once the receiver has taken piece j - slots.
void send_piece(double& clock, Recent& sent, const Recent& taken, std::int64_t j, int slots,
                const PipelineHop& hop) {
  if (j >= slots) clock = std::max(clock, sent.at(j - slots));
  double leaves = clock;
  if (j > 0) leaves = std::max(leaves, sent.at(j - 1));
  if (j >= slots) leaves = std::max(leaves, taken.at(j - slots));
  double done = leaves + hop.slice_time;
  if (j > 0) done = std::max(done, sent.at(j - 1) + hop.period);
  sent.set(j, done);
}

// A connection's receiver side: piece j is taken once it arrived, usable a hop latency later.
void take_piece(double& clock, const Recent& sent, Recent& taken, std::int64_t j, double latency) {
  const double arrived = sent.at(j);
  const double returned = std::max(clock, arrived);
  taken.set(j, returned);
  clock = std::max(returned, arrived + latency);
}

// One member's channel: its actor's clock, its outgoing connection's sends and its incoming
// connection's takes.
struct Member {
  double clock = 0;
  Recent sent;   // [u] when the member's slice u finished leaving
  Recent taken;  // [t] when the member's take of slice t returned (its slot t + slots freed)
  explicit Member(int slots) : sent(slots + 1), taken(slots + 1) {}
};

}  // namespace

double ring_pipeline_time(const std::vector<PipelineHop>& hops, const RingPipeline& shape) {
  const int d = ring_period(hops);
  const int m = std::max(1, shape.slices), slots = std::max(m + 1, shape.slots);
  const std::int64_t per_loop = static_cast<std::int64_t>(shape.steps) * m;
  std::vector<Member> members(static_cast<std::size_t>(d), Member(slots));
  const auto member = [&](int q) -> Member& { return members[static_cast<std::size_t>((q % d + d) % d)]; };
  // Member q puts slice u on its connection to q + 1, and takes slice t from q - 1.
  const auto put = [&](int q, std::int64_t u) {
    send_piece(member(q).clock, member(q).sent, member(q + 1).taken, u, slots, hops[static_cast<std::size_t>(q % d)]);
  };
  const auto take = [&](int q, std::int64_t t) {
    take_piece(member(q).clock, member(q - 1).sent, member(q).taken, t,
               hops[static_cast<std::size_t>((q - 1 + d) % d)].latency);
  };
  for (int loop = 0; loop < shape.loops; ++loop) {
    const std::int64_t first = static_cast<std::int64_t>(loop) * per_loop;
    for (int q = 0; q < d; ++q)
      for (int j = 0; j < m; ++j) put(q, first + j);  // the member's own slices
    for (std::int64_t t = 0; t < per_loop; ++t)
      for (int q = 0; q < d; ++q) {
        take(q, first + t);
        if (t + m < per_loop) put(q, first + t + m);  // forwarded; the last step's slices stay
      }
  }
  double end = 0;
  const std::int64_t last = static_cast<std::int64_t>(shape.loops) * per_loop - 1;
  for (int q = 0; q < d; ++q) end = std::max({end, member(q).clock, member(q).sent.at(last)});
  return end;
}

namespace {

// Members with every child before its parent.
std::vector<int> children_first(const std::vector<TreeMember>& members) {
  std::vector<int> order, stack;
  for (int r = 0; r < static_cast<int>(members.size()); ++r)
    if (members[static_cast<std::size_t>(r)].parent < 0) stack.push_back(r);
  while (!stack.empty()) {  // parents first, then reversed
    const int x = stack.back();
    stack.pop_back();
    order.push_back(x);
    for (int y : members[static_cast<std::size_t>(x)].children) stack.push_back(y);
  }
  std::reverse(order.begin(), order.end());
  return order;
}

// Each connection's `rest`: one piece's way on from it. A hop costs its slice time and latency;
// down from x, the deepest way to a member below it; up from x, on to the root and down from there.
void note_rests(const std::vector<TreeMember>& members, const std::vector<int>& order, TreeTimes& times) {
  const std::size_t n = members.size();
  const auto hop = [](const PipelineHop& h) { return h.slice_time + h.latency; };
  std::vector<double> below(n, 0.0);  // the deepest way down from a member, once it has the piece
  for (int x : order)                 // children first
    for (int y : members[static_cast<std::size_t>(x)].children)
      below[static_cast<std::size_t>(x)] =
          std::max(below[static_cast<std::size_t>(x)],
                   hop(members[static_cast<std::size_t>(y)].down) + below[static_cast<std::size_t>(y)]);
  std::vector<double> above(n, 0.0);  // from a member's having its reduced piece to the end
  for (auto it = order.rbegin(); it != order.rend(); ++it) {  // parents first
    const auto x = static_cast<std::size_t>(*it);
    const int parent = members[x].parent;
    above[x] = parent < 0 ? below[x] : hop(members[x].up) + above[static_cast<std::size_t>(parent)];
    if (parent < 0) continue;
    times.up[x].rest = members[x].up.latency + above[static_cast<std::size_t>(parent)];
    times.down[x].rest = members[x].down.latency + below[x];
  }
}

}  // namespace

double tree_pipeline_time(const std::vector<TreeMember>& members, const TreePipeline& shape, TreeTimes* times) {
  const std::size_t n = members.size();
  const int slots = std::max(2, shape.slots);
  const std::vector<int> order = children_first(members);
  std::vector<double> up_clock(n, 0.0), down_clock(n, 0.0);
  // Per member x: its connection to its parent going up, and from its parent coming down.
  std::vector<Recent> up_sent(n, Recent(slots + 1)), up_taken(n, Recent(slots + 1));
  std::vector<Recent> down_sent(n, Recent(slots + 1)), down_taken(n, Recent(slots + 1));
  double final = 0;
  if (times) *times = TreeTimes{std::vector<ConnectionTimes>(n), std::vector<ConnectionTimes>(n)};
  const auto note_first = [&](std::int64_t j, std::vector<ConnectionTimes> TreeTimes::*which, std::size_t x,
                              const Recent& sent, const PipelineHop& hop) {
    if (times && j == 0) ((*times).*which)[x].first_leaves = sent.at(0) - hop.slice_time;
  };
  for (std::int64_t j = 0; j < shape.pieces; ++j) {
    for (int x : order) {  // up: each member adds its children's pieces to its own, then sends
      const TreeMember& me = members[static_cast<std::size_t>(x)];
      double& clock = up_clock[static_cast<std::size_t>(x)];
      for (int y : me.children)
        take_piece(clock, up_sent[static_cast<std::size_t>(y)], up_taken[static_cast<std::size_t>(y)], j,
                   members[static_cast<std::size_t>(y)].up.latency);
      if (me.parent >= 0) {
        send_piece(clock, up_sent[static_cast<std::size_t>(x)], up_taken[static_cast<std::size_t>(x)], j, slots,
                   me.up);
        note_first(j, &TreeTimes::up, static_cast<std::size_t>(x), up_sent[static_cast<std::size_t>(x)], me.up);
      } else
        final = clock;
    }
    for (auto it = order.rbegin(); it != order.rend(); ++it) {  // down: the result to each child
      const int x = *it;
      const TreeMember& me = members[static_cast<std::size_t>(x)];
      double& clock = down_clock[static_cast<std::size_t>(x)];
      if (me.parent >= 0)
        take_piece(clock, down_sent[static_cast<std::size_t>(x)], down_taken[static_cast<std::size_t>(x)], j,
                   me.down.latency);
      else
        clock = std::max(clock, final);
      for (int y : me.children) {
        const auto yi = static_cast<std::size_t>(y);
        send_piece(clock, down_sent[yi], down_taken[yi], j, slots, members[yi].down);
        note_first(j, &TreeTimes::down, yi, down_sent[yi], members[yi].down);
      }
    }
  }
  double end = 0;
  const std::int64_t last = shape.pieces - 1;
  for (std::size_t x = 0; x < n; ++x) {
    end = std::max({end, up_clock[x], down_clock[x]});
    if (members[x].parent < 0) continue;
    end = std::max({end, up_sent[x].at(last), down_sent[x].at(last)});
    if (times) {
      times->up[x].last_arrives = up_sent[x].at(last);
      times->down[x].last_arrives = down_sent[x].at(last);
    }
  }
  if (times) note_rests(members, order, *times);
  return end;
}

double link_bound(std::vector<LinkJob>& jobs) {
  double best = 0;
  // The jobs released from each job's release on: the latest first, adding the earlier ones.
  std::sort(jobs.begin(), jobs.end(),
            [](const LinkJob& a, const LinkJob& b) { return a.release > b.release; });
  double work = 0, tail = std::numeric_limits<double>::infinity();
  for (const LinkJob& j : jobs) {
    work += j.work;
    tail = std::min(tail, j.tail);
    best = std::max(best, j.release + work + tail);
  }
  // The jobs with at least each job's tail: the longest first.
  std::sort(jobs.begin(), jobs.end(), [](const LinkJob& a, const LinkJob& b) { return a.tail > b.tail; });
  double release = std::numeric_limits<double>::infinity();
  work = 0;
  for (const LinkJob& j : jobs) {
    work += j.work;
    release = std::min(release, j.release);
    best = std::max(best, release + work + j.tail);
  }
  return best;
}

}  // namespace aggsim
