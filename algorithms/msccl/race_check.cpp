#include "algorithms/msccl/race_check.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "algorithms/msccl/chunk_pieces.hpp"
#include "sim/core/error.hpp"

namespace aggsim {

namespace {

const char* buffer_letter(MscclBuffer b) {
  return b == MscclBuffer::input ? "i" : b == MscclBuffer::output ? "o" : "s";
}

// One step's touch of a range of chunks, as the step names them.
struct Touch {
  MscclBuffer buffer = MscclBuffer::input;
  int offset = 0, count = 0;
  bool writes = false;
};

// The ranges a step reads and writes: its source, then its destination (`re` reads and writes it).
std::vector<Touch> touches(const MscclStep& st) {
  std::vector<Touch> out;
  if (msccl_step_reads_src(st.type)) out.push_back({st.src, st.src_offset, st.count, false});
  if (msccl_step_writes_dst(st.type)) out.push_back({st.dst, st.dst_offset, st.count, true});
  return out;
}

template <class T>
using GpuBuffers = std::vector<std::array<ChunkPieces<T>, 3>>;  // per GPU: input, output, scratch

template <class T>
GpuBuffers<T> buffers_of(const MscclProgram& p) {
  GpuBuffers<T> out(static_cast<std::size_t>(p.gpus));
  for (const MscclGpu& g : p.gpu) {
    auto& b = out[static_cast<std::size_t>(g.id)];
    b[0] = ChunkPieces<T>(p.input_size(), T{});
    b[1] = ChunkPieces<T>(p.output_size(), T{});
    b[2] = ChunkPieces<T>(g.scratch_chunks, T{});
  }
  return out;
}

// The threadblocks touching a range, each with whether it writes it.
struct Sharing {
  std::vector<std::pair<int, bool>> tbs;
};

// Threadblocks that touch a chunk another one touches too, one of them writing it: the only ones
// whose order can make a race, so the only ones the clocks follow.
std::vector<int> sharing_threadblocks(const MscclStepGraph& graph, long long& work) {
  const MscclProgram& p = graph.program();
  GpuBuffers<Sharing> buffers = buffers_of<Sharing>(p);
  for (int id = 0; id < static_cast<int>(graph.size()); ++id) {
    const MscclStepRef& s = graph.at(id);
    for (const Touch& t : touches(*s.step)) {
      const MscclLocation at = msccl_locate(p, s.gpu, t.buffer, t.offset);
      buffers[static_cast<std::size_t>(s.gpu)][static_cast<int>(at.storage)].update(
          at.index, at.index + t.count, [&](int, int, Sharing& share) {
            ++work;
            auto it = std::find_if(share.tbs.begin(), share.tbs.end(),
                                   [&](const auto& e) { return e.first == s.tb_global; });
            if (it == share.tbs.end())
              share.tbs.emplace_back(s.tb_global, t.writes);
            else
              it->second = it->second || t.writes;
          });
    }
  }
  std::vector<char> sharing(static_cast<std::size_t>(graph.threadblocks()), 0);
  for (auto& gpu : buffers)
    for (auto& buffer : gpu)
      buffer.read(0, buffer.size(), [&](int, int, const Sharing& share) {
        const bool written =
            std::any_of(share.tbs.begin(), share.tbs.end(), [](const auto& e) { return e.second; });
        if (share.tbs.size() < 2 || !written) return;
        for (const auto& [tb, writes] : share.tbs) sharing[static_cast<std::size_t>(tb)] = 1;
      });
  std::vector<int> slot(sharing.size(), -1);  // threadblock -> its entry in the clocks
  int next = 0;
  for (std::size_t tb = 0; tb < sharing.size(); ++tb)
    if (sharing[tb]) slot[tb] = next++;
  return slot;
}

// A range's last write and the reads since, one per threadblock (step ids).
struct Accesses {
  int last_write = -1;
  std::vector<int> reads;
};

class RaceCheck {
 public:
  RaceCheck(const MscclStepGraph& graph, std::vector<int> slot)
      : g_(graph), p_(graph.program()), slot_(std::move(slot)), clocks_(graph.size()), left_(graph.size()) {
    entries_ = static_cast<int>(std::count_if(slot_.begin(), slot_.end(), [](int s) { return s >= 0; }));
    for (int id = 0; id < static_cast<int>(graph.size()); ++id)
      left_[static_cast<std::size_t>(id)] = graph.successors(id);
  }

  long long run() {
    long long joins = 0;
    for (int id = 0; id < static_cast<int>(g_.size()); ++id)
      if (g_.dependency(id) >= 0 || g_.feeding_send(id) >= 0) ++joins;
    if (joins * entries_ > kMscclRaceClockEntries)
      throw InputError(fmt::format(
          "{}: algo: checking the program for races takes {} threadblocks sharing chunks x {} steps that "
          "wait for another = {} clock entries, more than the {} aggsim checks (about a second): share "
          "fewer chunks between threadblocks, or use fewer steps",
          p_.where(p_.line), entries_, joins, joins * entries_, kMscclRaceClockEntries));
    accesses_ = buffers_of<Accesses>(p_);
    for (const int id : g_.order()) {
      make_clock(id);
      for (const Touch& t : touches(*g_.at(id).step)) touch(id, t);
      for (const int before : {g_.previous(id), g_.dependency(id), g_.feeding_send(id)})
        if (before >= 0 && --left_[static_cast<std::size_t>(before)] == 0)
          clocks_[static_cast<std::size_t>(before)].reset();
    }
    return work_;
  }

 private:
  using Clock = std::vector<std::uint32_t>;

  // For each followed threadblock, how many of its steps come before `id`: the clock of the step
  // before it in its threadblock, raised by its dependency's and its feeding send's, each with its
  // own step counted. A step's own threadblock is left out of its clock (its steps are in order), so
  // only the steps that wait for another copy a clock.
  void make_clock(int id) {
    const int prev = g_.previous(id);
    std::shared_ptr<const Clock> base = prev >= 0 ? clocks_[static_cast<std::size_t>(prev)] : nullptr;
    std::shared_ptr<Clock> joined;
    for (const int other : {g_.dependency(id), g_.feeding_send(id)}) {
      if (other < 0) continue;
      if (!joined) joined = base ? std::make_shared<Clock>(*base) : std::make_shared<Clock>(entries_, 0);
      if (const auto& theirs = clocks_[static_cast<std::size_t>(other)])
        for (int k = 0; k < entries_; ++k) (*joined)[k] = std::max((*joined)[k], (*theirs)[k]);
      work_ += entries_;
      raise(*joined, other);
    }
    if (joined) base = joined;
    clocks_[static_cast<std::size_t>(id)] = base;
  }
  int slot_of(int id) const { return slot_[static_cast<std::size_t>(g_.at(id).tb_global)]; }
  void raise(Clock& c, int id) const {
    if (slot_of(id) >= 0)
      c[slot_of(id)] = std::max(c[slot_of(id)], static_cast<std::uint32_t>(g_.at(id).index) + 1);
  }
  // Whether step `before` (visited earlier) comes before step `id` in every run.
  bool ordered(int before, int id) const {
    if (g_.at(before).tb_global == g_.at(id).tb_global) return true;
    const auto& c = clocks_[static_cast<std::size_t>(id)];
    const int k = slot_of(before);
    return c && k >= 0 && (*c)[k] >= static_cast<std::uint32_t>(g_.at(before).index) + 1;
  }

  void touch(int id, const Touch& t) {
    const MscclStepRef& s = g_.at(id);
    const MscclLocation at = msccl_locate(p_, s.gpu, t.buffer, t.offset);
    accesses_[static_cast<std::size_t>(s.gpu)][static_cast<int>(at.storage)].update(
        at.index, at.index + t.count, [&](int begin, int, Accesses& a) {
          ++work_;
          const int named = t.offset + (begin - at.index);  // the chunk as this step names it
          if (a.last_write >= 0 && !ordered(a.last_write, id)) race(id, t, named, a.last_write, true);
          if (t.writes) {
            for (const int r : a.reads)
              if (!ordered(r, id)) race(id, t, named, r, false);
            a.last_write = id;
            a.reads.clear();
            return;
          }
          auto same = std::find_if(a.reads.begin(), a.reads.end(),
                                   [&](int r) { return g_.at(r).tb_global == s.tb_global; });
          if (same != a.reads.end())
            *same = id;
          else
            a.reads.push_back(id);
        });
  }

  [[noreturn]] void race(int id, const Touch& t, int chunk, int other, bool other_writes) const {
    throw InputError(fmt::format(
        "{}: step: the program races: {} {} {}[{}] while {} {} it, with no dependency (nor chain of "
        "messages) between them: the runtime may run them in either order; order them with depid/deps",
        p_.where(g_.at(id).step->line), g_.name(id), t.writes ? "writes" : "reads", buffer_letter(t.buffer),
        chunk, g_.name(other), other_writes ? "writes" : "reads"));
  }

  const MscclStepGraph& g_;
  const MscclProgram& p_;
  std::vector<int> slot_;  // per global threadblock: its clock entry, -1 if not followed
  int entries_ = 0;
  std::vector<std::shared_ptr<const Clock>> clocks_;  // per step, while a later step needs it
  std::vector<int> left_;                             // per step: later steps that still need its clock
  GpuBuffers<Accesses> accesses_;
  long long work_ = 0;
};

}  // namespace

MscclRaceFacts check_msccl_races(const MscclStepGraph& graph) {
  MscclRaceFacts facts;
  std::vector<int> slot = sharing_threadblocks(graph, facts.clock_entries);
  facts.sharing_threadblocks =
      static_cast<int>(std::count_if(slot.begin(), slot.end(), [](int s) { return s >= 0; }));
  if (facts.sharing_threadblocks == 0) return facts;
  facts.clock_entries += RaceCheck(graph, std::move(slot)).run();
  return facts;
}

}  // namespace aggsim
