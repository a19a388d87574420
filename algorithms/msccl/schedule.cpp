#include "algorithms/msccl/schedule.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <map>
#include <set>
#include <stdexcept>
#include <tuple>
#include <vector>

#include "algorithms/msccl/exact_result.hpp"
#include "algorithms/msccl/race_check.hpp"
#include "algorithms/msccl/step_graph.hpp"
#include "algorithms/nccl/nccl_tuning.hpp"
#include "sim/core/error.hpp"

namespace aggsim {

MscclPipe msccl_pipe(Protocol p) {
  // The runtime's loop geometry is NCCL's ring chunking (MSCCL_CHUNKSTEPS = NCCL_STEPS / 2 steps per
  // chunk and MSCCL_SLICESTEPS = NCCL_STEPS / 4 per slice for Simple, one step for LL and LL128).
  const NcclChunking c = nccl_chunking(NcclSystem{}, NcclAlgorithm::ring, p, 0, 1);
  return {c.slots, c.slices_per_chunk, c.chunk_bytes};
}

int msccl_max_call_chunks(const MscclProgram& p, double total_bytes) {
  const double per_chunk = std::ceil(total_bytes / p.chunks_per_loop);
  if (per_chunk <= 0) return kMscclMaxCallChunks;
  const double fit = std::floor(msccl_pipe(p.protocol).chunk_bytes / per_chunk);
  return static_cast<int>(std::clamp(fit, 1.0, static_cast<double>(kMscclMaxCallChunks)));
}

std::int64_t msccl_loops(const MscclProgram& p, double total_bytes) {
  const double loops = std::ceil(total_bytes / p.chunks_per_loop / msccl_pipe(p.protocol).chunk_bytes);
  // Beyond kMscclMaxLoops the scenario was refused; the bound only keeps the cast defined.
  return static_cast<std::int64_t>(std::clamp(loops, 1.0, static_cast<double>(kMscclMaxLoops) + 1));
}

namespace {

// The schedule without data: each threadblock's steps in order, each waiting for its dependency,
// moving its messages over connections that hold at most the runtime's slots.
class Schedule {
 public:
  Schedule(const MscclProgram& p, int max_call_chunks)
      : p_(p), max_call_(std::max(1, max_call_chunks)), pipe_(msccl_pipe(p.protocol)) {
    std::map<std::tuple<int, int, int>, int> connection;  // (sender, receiver, channel) -> index
    const auto connection_of = [&](int from, int to, int channel) {
      const auto [it, fresh] =
          connection.emplace(std::tuple{from, to, channel}, static_cast<int>(links_.size()));
      if (fresh) links_.emplace_back();
      return it->second;
    };
    first_.assign(static_cast<std::size_t>(p.gpus) + 1, 0);
    for (const MscclGpu& g : p.gpu) {
      first_[static_cast<std::size_t>(g.id) + 1] =
          first_[static_cast<std::size_t>(g.id)] + static_cast<int>(g.threadblocks.size());
      for (const MscclThreadblock& tb : g.threadblocks) {
        Block b;
        b.gpu = g.id;
        b.def = &tb;
        const int index = static_cast<int>(blocks_.size());
        if (tb.send_peer >= 0) {
          b.send_link = connection_of(g.id, tb.send_peer, tb.channel);
          links_[static_cast<std::size_t>(b.send_link)].sender = index;
        }
        if (tb.recv_peer >= 0) {
          b.recv_link = connection_of(tb.recv_peer, g.id, tb.channel);
          links_[static_cast<std::size_t>(b.recv_link)].receiver = index;
        }
        blocks_.push_back(b);
      }
    }
  }

  // Runs until every threadblock has finished or none can move; true when all finished.
  bool run() {
    for (std::size_t i = 0; i < blocks_.size(); ++i) enqueue(static_cast<int>(i));
    while (!ready_.empty()) {
      const int i = ready_.front();
      ready_.pop_front();
      blocks_[static_cast<std::size_t>(i)].queued = false;
      advance(i);
    }
    return std::all_of(blocks_.begin(), blocks_.end(),
                       [](const Block& b) { return b.step == b.def->steps.size(); });
  }

  // Each threadblock that could not finish: where it stopped and what it waits for.
  std::string deadlock_report(int& line) const {
    std::string out;
    int listed = 0, more = 0;
    line = 0;
    for (const Block& b : blocks_) {
      if (b.step == b.def->steps.size()) continue;
      const MscclStep& st = b.def->steps[b.step];
      if (line == 0) line = st.line;
      if (listed == 8) {
        ++more;
        continue;
      }
      ++listed;
      std::string why;
      switch (b.waiting) {
        case Wait::dependency:
          why = fmt::format("waits for tb {} step {}", st.dep_tb, st.dep_step);
          break;
        case Wait::message:
          why =
              fmt::format("waits for a message from gpu {} on channel {}", b.def->recv_peer, b.def->channel);
          break;
        case Wait::slot:
          why = fmt::format("waits for a free slot towards gpu {} on channel {} (its {} slices are taken)",
                            b.def->send_peer, b.def->channel, pipe_.slots);
          break;
        case Wait::none:
          why = "cannot go on";
          break;
      }
      out += fmt::format("{}gpu {} tb {} step {} ({}, line {}) {}", out.empty() ? "" : "; ", b.gpu, b.def->id,
                         b.step, msccl_step_type_code(st.type), st.line, why);
    }
    if (more > 0) out += fmt::format("; and {} more threadblocks", more);
    return out;
  }

  const MscclPipe& pipe() const { return pipe_; }
  long long work() const { return work_; }

 private:
  enum class Wait { none, dependency, message, slot };
  struct Link {
    std::int64_t queued = 0;         // messages sent and not yet received
    int sender = -1, receiver = -1;  // threadblock indices
  };
  struct Block {
    int gpu = 0;
    const MscclThreadblock* def = nullptr;
    std::size_t step = 0;
    std::int64_t left = -1;  // messages the current step has still to move (-1: not counted yet)
    bool started = false;    // the current step's dependency has been met
    int completed = 0;       // steps done
    int send_link = -1, recv_link = -1;
    Wait waiting = Wait::none;
    bool queued = false;
    std::vector<std::pair<int, int>> waiters;  // (threadblock, steps it needs done here)
  };

  void enqueue(int i) {
    Block& b = blocks_[static_cast<std::size_t>(i)];
    if (b.queued) return;
    b.queued = true;
    ready_.push_back(i);
  }
  void wake(int i, Wait on) {
    if (i >= 0 && blocks_[static_cast<std::size_t>(i)].waiting == on) enqueue(i);
  }

  void advance(int i) {
    Block& b = blocks_[static_cast<std::size_t>(i)];
    b.waiting = Wait::none;
    ++work_;
    const auto& steps = b.def->steps;
    while (b.step < steps.size()) {
      const MscclStep& st = steps[b.step];
      if (!b.started) {
        if (st.dep_tb >= 0) {
          Block& dep = blocks_[static_cast<std::size_t>(first_[static_cast<std::size_t>(b.gpu)] + st.dep_tb)];
          if (dep.completed <= st.dep_step) {
            b.waiting = Wait::dependency;
            dep.waiters.emplace_back(i, st.dep_step + 1);
            return;
          }
        }
        b.started = true;
      }
      if (!execute(b, st)) return;
      ++b.step;
      b.left = -1;
      b.started = false;
      ++b.completed;
      auto& waiters = b.waiters;
      for (std::size_t k = 0; k < waiters.size();)
        if (waiters[k].second <= b.completed) {
          enqueue(waiters[k].first);
          waiters[k] = waiters.back();
          waiters.pop_back();
        } else {
          ++k;
        }
    }
  }

  // Moves as many of the step's messages as its connections allow; true when it is done. A step
  // that receives and sends passes each message on as it takes it, as the runtime does.
  bool execute(Block& b, const MscclStep& st) {
    const bool receives = msccl_step_receives(st.type), sends = msccl_step_sends(st.type);
    if (!receives && !sends) return true;
    if (b.left < 0) b.left = static_cast<std::int64_t>((st.count + max_call_ - 1) / max_call_) * pipe_.slices;
    Link* in = receives ? &links_[static_cast<std::size_t>(b.recv_link)] : nullptr;
    Link* out = sends ? &links_[static_cast<std::size_t>(b.send_link)] : nullptr;
    while (b.left > 0) {
      std::int64_t k = b.left;
      if (in) k = std::min(k, in->queued);
      if (out) k = std::min<std::int64_t>(k, pipe_.slots - out->queued);
      if (k > 0) {
        b.left -= k;
        if (in) {
          in->queued -= k;
          wake(in->sender, Wait::slot);
        }
        if (out) {
          out->queued += k;
          wake(out->receiver, Wait::message);
        }
      } else if (!exchange(b, in, out)) {
        b.waiting = in && in->queued == 0 ? Wait::message : Wait::slot;
        return false;
      }
    }
    return true;
  }

  // A step that only sends, blocked on a full connection whose receiver is blocked in a step that
  // only receives from it (or the other way round): the two exchange what they can at once, as
  // they would message by message.
  bool exchange(Block& b, Link* in, Link* out) {
    if ((in != nullptr) == (out != nullptr)) return false;
    Link& link = in ? *in : *out;
    const int other = in ? link.sender : link.receiver;
    if (other < 0) return false;
    Block& o = blocks_[static_cast<std::size_t>(other)];
    if (o.waiting != (in ? Wait::slot : Wait::message) || o.left <= 0) return false;
    const MscclStep& ost = o.def->steps[o.step];
    if (msccl_step_sends(ost.type) == msccl_step_receives(ost.type)) return false;  // it does both
    Block& sender = in ? o : b;
    Block& receiver = in ? b : o;
    // The receiver takes what is queued and all the sender has; the sender sends while there is room.
    const std::int64_t taken = std::min(receiver.left, link.queued + sender.left);
    const std::int64_t sent = std::min(sender.left, pipe_.slots - link.queued + taken);
    if (taken == 0 && sent == 0) return false;
    link.queued += sent - taken;
    sender.left -= sent;
    receiver.left -= taken;
    enqueue(other);
    return true;
  }

  const MscclProgram& p_;
  int max_call_;
  MscclPipe pipe_;
  std::vector<Link> links_;
  std::vector<Block> blocks_;
  std::vector<int> first_;  // index of each GPU's first threadblock
  std::deque<int> ready_;
  long long work_ = 0;  // threadblock advances
};

const char* protocol_label(Protocol p) {
  return p == Protocol::simple ? "Simple" : p == Protocol::ll128 ? "LL128" : "LL";
}

// The deadlock check with calls of at most `max_call_chunks` chunks: "" when every threadblock
// finishes, else "file:line: step: the program deadlocks (...): gpu 0 tb 0 step 3 (r, line 7) waits
// for a message from gpu 1 on channel 0; ...".
std::string deadlock(const MscclProgram& p, int max_call_chunks, long long& work) {
  Schedule schedule(p, max_call_chunks);
  const bool finished = schedule.run();
  work += schedule.work();
  if (finished) return "";
  int line = 0;
  const std::string blocked = schedule.deadlock_report(line);
  const MscclPipe& pipe = schedule.pipe();
  return fmt::format(
      "{}: step: the program deadlocks ({}: a connection holds {} slices, a call sends {}{}): {}",
      p.where(line), protocol_label(p.protocol), pipe.slots, pipe.slices,
      max_call_chunks < kMscclMaxCallChunks ? fmt::format(", a call carries at most {} chunk{}",
                                                          max_call_chunks, max_call_chunks == 1 ? "" : "s")
                                            : "",
      blocked);
}

}  // namespace

MscclVerdict verify_msccl_program(const MscclProgram& p) {
  std::vector<int> counts;
  for (const MscclGpu& g : p.gpu)
    for (const MscclThreadblock& tb : g.threadblocks)
      for (const MscclStep& s : tb.steps)
        if (msccl_step_sends(s.type) || msccl_step_receives(s.type)) counts.push_back(s.count);
  std::sort(counts.begin(), counts.end());
  counts.erase(std::unique(counts.begin(), counts.end()), counts.end());
  MscclVerdict verdict;
  std::set<std::vector<int>> cuts;
  for (int m = kMscclMaxCallChunks; m >= 1; --m) {
    std::vector<int> cut;
    for (int c : counts) cut.push_back((c + m - 1) / m);
    if (!cuts.insert(cut).second) continue;
    if (const std::string blocked = deadlock(p, m, verdict.work); !blocked.empty()) throw InputError(blocked);
  }
  verdict.call_cuts = static_cast<int>(cuts.size());
  // Without a deadlock at any cut the program's order has no cycle: a receive ends after its send.
  const MscclStepGraph graph(p);
  if (graph.order().size() != graph.size())
    throw std::logic_error("msccl: a program that finishes has steps in no order");
  const MscclRaceFacts races = check_msccl_races(graph);
  verdict.sharing_threadblocks = races.sharing_threadblocks;
  const MscclWrongResult wrong = check_msccl_result(graph);
  verdict.work += races.clock_entries + wrong.work;
  verdict.wrong_result = wrong.message;
  verdict.wrong_rank = wrong.rank;
  verdict.wrong_chunk = wrong.chunk;
  return verdict;
}

std::string describe_msccl_verdict(const MscclProgram& p, const MscclVerdict& v) {
  std::size_t threadblocks = 0, connections = 0;
  for (const MscclGpu& g : p.gpu) {
    threadblocks += g.threadblocks.size();
    for (const MscclThreadblock& tb : g.threadblocks) connections += tb.send_peer >= 0 ? 1 : 0;
  }
  const MscclPipe pipe = msccl_pipe(p.protocol);
  std::string out =
      v.wrong_result.empty()
          ? fmt::format("{}: verdict: correct: every rank ends with the exact {} of the {} ranks' inputs\n",
                        p.file, msccl_collective_name(p.collective), p.gpus)
          : fmt::format(
                "{}: verdict: wrong result at rank {} chunk {} (wrong_result: run runs it anyway): {}\n",
                p.file, v.wrong_rank, v.wrong_chunk, v.wrong_result);
  out += fmt::format(
      "  checks passed: {} GPUs, {} threadblocks, {} steps read; dependencies exist, are signalled and "
      "form no cycle; {} connections, each with one sending and one receiving threadblock whose messages "
      "match; no deadlock with {}'s connections of {} slices, {}; {}\n",
      p.gpus, threadblocks, p.step_count, connections, protocol_label(p.protocol), pipe.slots,
      v.call_cuts == 1
          ? std::string("steps cut into calls the one way the runtime does at every size")
          : fmt::format("steps cut into calls each of the {} ways the runtime does by size", v.call_cuts),
      v.sharing_threadblocks == 0
          ? std::string("no race (no two threadblocks share a chunk)")
          : fmt::format("no race ({} threadblocks share chunks, every shared access ordered)",
                        v.sharing_threadblocks));
  return out;
}

}  // namespace aggsim
