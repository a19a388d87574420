#include "algorithms/msccl/exact_result.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <limits>
#include <memory>
#include <vector>

#include "algorithms/msccl/chunk_pieces.hpp"
#include "sim/core/error.hpp"

namespace aggsim {

namespace {

// Input chunk j of rank q is key j * gpus + q: the ranks' copies of one chunk are consecutive keys.
struct Run {
  std::int64_t first = 0, length = 0;
  std::uint64_t count = 0;
};
using Runs = std::vector<Run>;

// What the chunks of a range hold: at relative index i (a buffer index, or a chunk's place in a
// message) the keys of `runs` plus (shift + i) * gpus. So a range whose chunks each hold their own
// position's chunk is one description, whatever its length. Null runs: undefined (never written).
struct Sum {
  std::shared_ptr<const Runs> runs;
  std::int64_t shift = 0;
  bool defined() const { return runs != nullptr; }
};

// A described range and where its value went wrong: `origin` is the step that first made a wrong
// value of it (-1: none yet); `writer` the step that last wrote it (-1: its initial value).
struct Cell {
  Sum sum;
  int origin = -1;
  int writer = -1;
};

// Part [begin, end) of a step's chunks (0 .. cnt - 1), relative to the step's first chunk.
struct Part {
  int begin = 0, end = 0;
  Cell cell;
};
using Parts = std::vector<Part>;

std::uint64_t saturating_add(std::uint64_t a, std::uint64_t b) {
  return a > std::numeric_limits<std::uint64_t>::max() - b ? std::numeric_limits<std::uint64_t>::max()
                                                           : a + b;
}

std::int64_t floor_div(std::int64_t a, std::int64_t b) {
  return a / b - ((a % b != 0) && ((a < 0) != (b < 0)));
}

class ExactResult {
 public:
  explicit ExactResult(const MscclStepGraph& graph)
      : g_(graph), p_(graph.program()), gpus_(p_.gpus), position_(graph.size(), 0) {
    for (std::size_t k = 0; k < graph.order().size(); ++k)
      position_[static_cast<std::size_t>(graph.order()[k])] = static_cast<int>(k);
    start_buffers();
  }

  MscclWrongResult run() {
    messages_.resize(g_.size());
    for (const int id : g_.order()) execute(id);
    MscclWrongResult r = verdict();
    r.work = work_;
    return r;
  }

 private:
  // ---- values ----
  Sum single_key(std::int64_t key) const { return {std::make_shared<const Runs>(1, Run{key, 1, 1}), 0}; }
  // a + b, both relative to the same indices.
  Sum add(const Sum& a, const Sum& b) {
    if (!a.defined() || !b.defined()) return {};
    const Runs &x = *a.runs, &y = *b.runs;
    spend(static_cast<long long>(x.size() + y.size()));
    const std::int64_t ox = a.shift * gpus_, oy = b.shift * gpus_;
    auto out = std::make_shared<Runs>();
    const auto push = [&](std::int64_t first, std::int64_t length, std::uint64_t count) {
      if (length <= 0) return;
      if (!out->empty() && out->back().first + out->back().length == first && out->back().count == count)
        out->back().length += length;
      else
        out->push_back({first, length, count});
    };
    std::size_t i = 0, j = 0;
    std::int64_t pa = x.empty() ? 0 : x[0].first + ox, pb = y.empty() ? 0 : y[0].first + oy;
    const auto end_a = [&] { return x[i].first + ox + x[i].length; };
    const auto end_b = [&] { return y[j].first + oy + y[j].length; };
    const auto next_a = [&] { pa = ++i < x.size() ? x[i].first + ox : 0; };
    const auto next_b = [&] { pb = ++j < y.size() ? y[j].first + oy : 0; };
    while (i < x.size() || j < y.size()) {
      if (j >= y.size() || (i < x.size() && end_a() <= pb)) {
        push(pa, end_a() - pa, x[i].count);
        next_a();
      } else if (i >= x.size() || end_b() <= pa) {
        push(pb, end_b() - pb, y[j].count);
        next_b();
      } else {  // the current parts overlap: what comes before the other, then the overlap
        if (pa < pb) push(pa, pb - pa, x[i].count), pa = pb;
        if (pb < pa) push(pb, pa - pb, y[j].count), pb = pa;
        const std::int64_t e = std::min(end_a(), end_b());
        push(pa, e - pa, saturating_add(x[i].count, y[j].count));
        const bool done_a = e == end_a(), done_b = e == end_b();
        pa = pb = e;
        if (done_a) next_a();
        if (done_b) next_b();
      }
    }
    return {std::move(out), 0};
  }
  // Whether a value can still be (part of) the right result: for an all-reduce a sum of copies of
  // one chunk position, each at most once; for an all-gather one input chunk.
  bool good(const Sum& s) const {
    if (!s.defined() || s.runs->empty()) return false;
    const Runs& r = *s.runs;
    if (p_.collective == MscclCollective::allgather)
      return r.size() == 1 && r[0].length == 1 && r[0].count == 1;
    for (const Run& run : r)
      if (run.count != 1) return false;
    return floor_div(r.front().first, gpus_) == floor_div(r.back().first + r.back().length - 1, gpus_);
  }

  // ---- buffers ----
  void start_buffers() {
    const bool aliased_output = p_.inplace && p_.collective == MscclCollective::allreduce;
    const bool aliased_input = p_.inplace && p_.collective == MscclCollective::allgather;
    for (const MscclGpu& g : p_.gpu) {
      auto& b = buffers_.emplace_back();
      // Input chunk c of rank q holds key c * gpus + q: relative to c, the key q.
      const Cell input{single_key(g.id), -1, -1};
      b[0] = aliased_input ? ChunkPieces<Cell>() : ChunkPieces<Cell>(p_.input_size(), input);
      b[1] = aliased_output ? ChunkPieces<Cell>() : ChunkPieces<Cell>(p_.output_size(), Cell{});
      b[2] = ChunkPieces<Cell>(g.scratch_chunks, Cell{});
      if (aliased_input) {  // rank q's input is output chunks q * n .. (q + 1) * n - 1
        const int n = p_.input_size(), at = g.id * n;
        Cell own{single_key(g.id - static_cast<std::int64_t>(at) * gpus_), -1, -1};
        b[1].update(at, at + n, [&](int, int, Cell& c) { c = own; });
      }
    }
  }
  ChunkPieces<Cell>& storage(int gpu, MscclBuffer b) {
    return buffers_[static_cast<std::size_t>(gpu)][static_cast<int>(b)];
  }
  // The step's `count` chunks of buffer `b` from `offset`, relative to the step's first chunk. A
  // value nothing wrote becomes wrong here, at the step that reads it.
  Parts load(int id, MscclBuffer b, int offset, int count) {
    const MscclStepRef& s = g_.at(id);
    const MscclLocation at = msccl_locate(p_, s.gpu, b, offset);
    Parts out;
    storage(s.gpu, at.storage).read(at.index, at.index + count, [&](int begin, int end, const Cell& c) {
      spend(1);
      Cell cell = c;
      cell.sum.shift += at.index;
      if (cell.origin < 0 && !good(cell.sum)) cell.origin = id;
      out.push_back({begin - at.index, end - at.index, std::move(cell)});
    });
    return out;
  }
  void store(int id, MscclBuffer b, int offset, const Parts& parts) {
    const MscclStepRef& s = g_.at(id);
    const MscclLocation at = msccl_locate(p_, s.gpu, b, offset);
    for (const Part& part : parts)
      storage(s.gpu, at.storage).update(at.index + part.begin, at.index + part.end, [&](int, int, Cell& c) {
        spend(1);
        c = part.cell;
        c.sum.shift -= at.index;
        c.writer = id;
      });
  }
  // Chunk by chunk x + y, cut where either changes.
  Parts add(int id, const Parts& x, const Parts& y) {
    Parts out;
    std::size_t i = 0, j = 0;
    while (i < x.size() && j < y.size()) {
      const int begin = std::max(x[i].begin, y[j].begin), end = std::min(x[i].end, y[j].end);
      Part part{begin, end, {}};
      part.cell.sum = add(x[i].cell.sum, y[j].cell.sum);
      const Cell& first_bad = earlier_origin(x[i].cell, y[j].cell);
      part.cell.origin = first_bad.origin >= 0 ? first_bad.origin : good(part.cell.sum) ? -1 : id;
      out.push_back(std::move(part));
      if (x[i].end == end) ++i;
      if (y[j].end == end) ++j;
    }
    return out;
  }
  const Cell& earlier_origin(const Cell& a, const Cell& b) const {
    if (a.origin < 0) return b;
    if (b.origin < 0) return a;
    return position_[static_cast<std::size_t>(a.origin)] <= position_[static_cast<std::size_t>(b.origin)] ? a
                                                                                                          : b;
  }

  void execute(int id) {
    const MscclStep& st = *g_.at(id).step;
    if (st.type == MscclStepType::nop) return;
    Parts received;
    if (msccl_step_receives(st.type) && g_.feeding_send(id) >= 0)
      received = std::move(messages_[static_cast<std::size_t>(g_.feeding_send(id))]);
    if (msccl_step_receives(st.type) && received.empty()) received.push_back({0, st.count, Cell{}});
    Parts value;
    switch (st.type) {
      case MscclStepType::send:
      case MscclStepType::copy:
        value = load(id, st.src, st.src_offset, st.count);
        break;
      case MscclStepType::recv:
      case MscclStepType::recv_copy_send:
        value = std::move(received);
        break;
      case MscclStepType::reduce:
        value = add(id, load(id, st.dst, st.dst_offset, st.count), load(id, st.src, st.src_offset, st.count));
        break;
      default:  // rrs, rrc, rrcs: the received chunks reduced with the local source
        value = add(id, received, load(id, st.src, st.src_offset, st.count));
        break;
    }
    if (msccl_step_writes_dst(st.type)) store(id, st.dst, st.dst_offset, value);
    if (msccl_step_sends(st.type)) messages_[static_cast<std::size_t>(id)] = std::move(value);
  }

  // ---- the verdict ----
  // The key chunk c of the result should hold alone (an all-gather's), or -1 for an all-reduce
  // (every rank's copy of chunk c).
  std::int64_t expected_key(int c) const {
    if (p_.collective == MscclCollective::allreduce) return -1;
    const int n = p_.input_size();
    return static_cast<std::int64_t>(c % n) * gpus_ + c / n;
  }
  bool exact(const Cell& cell, int c) const {
    if (!cell.sum.defined()) return false;
    const Runs& r = *cell.sum.runs;
    const std::int64_t offset = (cell.sum.shift + c) * static_cast<std::int64_t>(gpus_);
    if (r.size() != 1 || r[0].count != 1) return false;
    const std::int64_t key = expected_key(c);
    if (key < 0) return r[0].first + offset == static_cast<std::int64_t>(c) * gpus_ && r[0].length == gpus_;
    return r[0].first + offset == key && r[0].length == 1;
  }

  MscclWrongResult verdict() {
    const MscclBuffer result = msccl_result_buffer(p_);
    // An all-gather's expected chunk changes at each rank's block: check block by block.
    const int block = p_.collective == MscclCollective::allgather ? p_.input_size() : p_.output_size();
    for (int gpu = 0; gpu < gpus_; ++gpu) {
      int wrong = -1;
      Cell held;
      storage(gpu, result).read(0, p_.output_size(), [&](int begin, int end, const Cell& c) {
        for (int first = begin; wrong < 0 && first < end; first = (first / block + 1) * block)
          if (!exact(c, first)) {
            wrong = first;
            held = c;
          }
      });
      if (wrong >= 0) return describe(gpu, wrong, held);
    }
    return {};
  }

  MscclWrongResult describe(int gpu, int c, const Cell& held) const;

  void spend(long long units) {
    work_ += units;
    if (work_ > kMscclResultWork)
      throw InputError(fmt::format(
          "{}: algo: checking the program's result takes more than {} units of work (pieces of chunk "
          "ranges and runs of partial sums): aggsim checks programs up to that size (about a second)",
          p_.where(p_.line), kMscclResultWork));
  }

  const MscclStepGraph& g_;
  const MscclProgram& p_;
  int gpus_;
  std::vector<int> position_;                              // of each step in the graph's order
  std::vector<std::array<ChunkPieces<Cell>, 3>> buffers_;  // per GPU: input, output, scratch
  std::vector<Parts> messages_;  // per sending step: what it sent, until its receive takes it
  long long work_ = 0;
};

// Up to kShown names, then "and N more".
struct Names {
  static constexpr std::size_t kShown = 6;
  std::vector<std::string> names;
  std::size_t more = 0;
  std::size_t shown() const { return names.size(); }
  bool empty() const { return names.empty(); }
  void add(std::string name) {
    if (names.size() < kShown)
      names.push_back(std::move(name));
    else
      ++more;
  }
  std::string text() const {
    std::string out;
    for (std::size_t k = 0; k < names.size(); ++k) out += (k ? ", " : "") + names[k];
    if (more > 0) out += fmt::format(" and {} more", more);
    return out;
  }
};

std::string times(std::uint64_t n) {
  if (n == std::numeric_limits<std::uint64_t>::max()) return "2^64 - 1 or more times";
  return n == 2 ? "twice" : fmt::format("{} times", n);
}

// "misses rank 6; holds rank 2 twice": what chunk `c` of rank `gpu`'s result holds against what it
// should, then which step made it so.
MscclWrongResult ExactResult::describe(int gpu, int c, const Cell& held) const {
  const MscclGpu& g = p_.gpu[static_cast<std::size_t>(gpu)];
  std::string what = fmt::format("rank {} output chunk {}", gpu, c);
  if (!held.sum.defined()) {
    what += " holds undefined data";
  } else {
    // It should hold keys [lo, hi) once each: every rank's copy of chunk c, or one rank's chunk.
    const std::int64_t lo = expected_key(c) >= 0 ? expected_key(c) : static_cast<std::int64_t>(c) * gpus_;
    const std::int64_t hi = expected_key(c) >= 0 ? lo + 1 : lo + gpus_;
    const int per_rank = p_.input_size();
    // Chunk indices are named only where they are not the obvious one.
    const int natural = p_.collective == MscclCollective::allreduce ? c : per_rank == 1 ? 0 : -1;
    const auto name = [&](std::int64_t key) {
      const auto q = static_cast<int>(key % gpus_), j = static_cast<int>(key / gpus_);
      return j == natural ? fmt::format("rank {}", q) : fmt::format("rank {}'s chunk {}", q, j);
    };
    Names missing, extra;
    const std::int64_t offset = (held.sum.shift + c) * static_cast<std::int64_t>(gpus_);
    std::int64_t covered = lo;  // keys of [lo, hi) below this are held or already named missing
    for (const Run& r : *held.sum.runs) {
      const std::int64_t first = r.first + offset, end = first + r.length;
      for (std::int64_t k = covered; k < std::min(first, hi); ++k) missing.add(name(k));
      covered = std::max(covered, std::min(end, hi));
      // Keys outside [lo, hi) are extra at any count; those inside, beyond once.
      const auto extra_keys = [&](std::int64_t from, std::int64_t to, bool wanted) {
        if (from >= to || (wanted && r.count <= 1)) return;
        const std::string how = !wanted && r.count == 1 ? "" : " " + times(r.count);
        std::int64_t k = from;
        for (; k < to && extra.shown() < Names::kShown; ++k) extra.add(name(k) + how);
        extra.more += static_cast<std::size_t>(to - k);
      };
      extra_keys(first, std::min(end, lo), false);
      extra_keys(std::max(first, lo), std::min(end, hi), true);
      extra_keys(std::max(first, hi), end, false);
    }
    for (std::int64_t k = covered; k < hi; ++k) missing.add(name(k));
    if (!missing.empty()) what += " misses " + missing.text();
    if (!extra.empty()) what += (missing.empty() ? " holds " : "; holds ") + extra.text();
  }
  int line = g.line;
  std::string because;
  if (held.origin >= 0) {
    line = g_.at(held.origin).step->line;
    because =
        fmt::format("; the first wrong value came from {}",
                    held.sum.defined() ? g_.name(held.origin)
                                       : g_.name(held.origin) + ", which read a chunk nothing had written");
  } else if (held.writer >= 0) {
    line = g_.at(held.writer).step->line;
    because = fmt::format("; {} wrote it last", g_.name(held.writer));
  } else {
    because = "; no step writes it";
  }
  MscclWrongResult r;
  r.rank = gpu;
  r.chunk = c;
  r.message = fmt::format("{}: step: the program does not compute an {}: {}{}", p_.where(line),
                          msccl_collective_name(p_.collective), what, because);
  return r;
}

}  // namespace

MscclWrongResult check_msccl_result(const MscclStepGraph& graph) {
  return ExactResult(graph).run();
}

}  // namespace aggsim
