#include "algorithms/msccl/schedule.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <map>
#include <memory>
#include <set>
#include <vector>

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

namespace {

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

std::uint64_t origin_key(int gpu, int chunk) {
  return (static_cast<std::uint64_t>(gpu) << 32) | static_cast<std::uint32_t>(chunk);
}

// What a chunk holds, as a fingerprint: reducing adds the weights of the inputs it holds.
struct Fingerprint {
  std::uint64_t sum = 0;
  bool defined = false;
  static Fingerprint of(int gpu, int chunk) { return {splitmix64(origin_key(gpu, chunk)), true}; }
  static Fingerprint reduce(const Fingerprint& a, const Fingerprint& b) {
    return {a.sum + b.sum, a.defined && b.defined};
  }
};

// What a chunk holds, exactly: each input chunk it holds and how many times.
struct Contributions {
  using Entry = std::pair<std::uint64_t, std::uint32_t>;
  std::shared_ptr<const std::vector<Entry>> entries;
  bool defined = false;
  static Contributions of(int gpu, int chunk) {
    return {std::make_shared<const std::vector<Entry>>(1, Entry{origin_key(gpu, chunk), 1}), true};
  }
  static Contributions reduce(const Contributions& a, const Contributions& b) {
    if (!a.defined || !b.defined) return {};
    auto out = std::make_shared<std::vector<Entry>>();
    out->reserve(a.entries->size() + b.entries->size());
    auto x = a.entries->begin(), y = b.entries->begin();
    while (x != a.entries->end() || y != b.entries->end()) {
      if (y == b.entries->end() || (x != a.entries->end() && x->first < y->first))
        out->push_back(*x++);
      else if (x == a.entries->end() || y->first < x->first)
        out->push_back(*y++);
      else
        out->push_back({x->first, (x++)->second + (y++)->second});
    }
    return {std::move(out), true};
  }
};

template <class Value>
class Schedule {
 public:
  Schedule(const MscclProgram& p, int max_call_chunks)
      : p_(p), max_call_(std::max(1, max_call_chunks)), pipe_(msccl_pipe(p.protocol)) {
    const auto g_count = static_cast<std::size_t>(p.gpus);
    input_.resize(g_count);
    output_.resize(g_count);
    scratch_.resize(g_count);
    const bool aliased_output = p.inplace && p.collective == MscclCollective::allreduce;
    const bool aliased_input = p.inplace && p.collective == MscclCollective::allgather;
    for (const MscclGpu& g : p.gpu) {
      const auto i = static_cast<std::size_t>(g.id);
      if (!aliased_input) input_[i].resize(static_cast<std::size_t>(p.input_size()));
      if (!aliased_output) output_[i].resize(static_cast<std::size_t>(p.output_size()));
      scratch_[i].resize(static_cast<std::size_t>(g.scratch_chunks));
      for (int c = 0; c < p.input_size(); ++c) slot(g.id, MscclBuffer::input, c) = Value::of(g.id, c);
    }
    std::map<std::tuple<int, int, int>, int> connection;  // (sender, receiver, channel) -> index
    const auto connection_of = [&](int from, int to, int channel) {
      const auto [it, fresh] =
          connection.emplace(std::tuple{from, to, channel}, static_cast<int>(links_.size()));
      if (fresh) links_.emplace_back();
      return it->second;
    };
    first_.assign(g_count + 1, 0);
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

  // The collective's result on `gpu`: chunk c of the buffer the runtime leaves it in.
  const Value& result(int gpu, int chunk) const {
    const auto& storage = msccl_result_buffer(p_) == MscclBuffer::input ? input_ : output_;
    return storage[static_cast<std::size_t>(gpu)][static_cast<std::size_t>(chunk)];
  }

  int max_call() const { return max_call_; }
  const MscclPipe& pipe() const { return pipe_; }

 private:
  enum class Wait { none, dependency, message, slot };
  struct Message {
    std::vector<Value> values;  // on a call's first slice; the others carry bytes only
  };
  struct Link {
    std::deque<Message> fifo;
    int sender = -1, receiver = -1;  // threadblock indices
  };
  struct Block {
    int gpu = 0;
    const MscclThreadblock* def = nullptr;
    std::size_t step = 0;
    int call = 0, slice = 0;
    bool started = false;  // the current step's dependency has been met
    int completed = 0;     // steps done
    int send_link = -1, recv_link = -1;
    Wait waiting = Wait::none;
    bool queued = false;
    std::vector<std::pair<int, int>> waiters;  // (threadblock, steps it needs done here)
  };

  Value& slot(int gpu, MscclBuffer b, int offset) {
    const MscclLocation at = msccl_locate(p_, gpu, b, offset);
    auto& storage = at.storage == MscclBuffer::input    ? input_
                    : at.storage == MscclBuffer::output ? output_
                                                        : scratch_;
    return storage[static_cast<std::size_t>(gpu)][static_cast<std::size_t>(at.index)];
  }

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
      b.call = b.slice = 0;
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

  // Moves the step as far as it can; true when it is done.
  bool execute(Block& b, const MscclStep& st) {
    const bool receives = msccl_step_receives(st.type), sends = msccl_step_sends(st.type);
    if (!receives && !sends) {
      local(b, st);
      return true;
    }
    Link* in = receives ? &links_[static_cast<std::size_t>(b.recv_link)] : nullptr;
    Link* out = sends ? &links_[static_cast<std::size_t>(b.send_link)] : nullptr;
    const int calls = (st.count + max_call_ - 1) / max_call_;
    for (; b.call < calls; ++b.call, b.slice = 0)
      for (; b.slice < pipe_.slices; ++b.slice) {
        if (in && in->fifo.empty()) {
          b.waiting = Wait::message;
          return false;
        }
        if (out && static_cast<int>(out->fifo.size()) >= pipe_.slots) {
          b.waiting = Wait::slot;
          return false;
        }
        Message got, sent;
        if (in) {
          got = std::move(in->fifo.front());
          in->fifo.pop_front();
          wake(in->sender, Wait::slot);
        }
        if (b.slice == 0) transfer(b, st, got, sent);
        if (out) {
          out->fifo.push_back(std::move(sent));
          wake(out->receiver, Wait::message);
        }
      }
    return true;
  }

  // The data of one call (chunks [call * max, ...) of the step), on its first slice.
  void transfer(const Block& b, const MscclStep& st, const Message& got, Message& sent) {
    const int begin = b.call * max_call_, end = std::min(st.count, begin + max_call_);
    for (int c = begin; c < end; ++c) {
      const auto k = static_cast<std::size_t>(c - begin);
      const Value received = k < got.values.size() ? got.values[k] : Value{};
      switch (st.type) {
        case MscclStepType::send:
          sent.values.push_back(slot(b.gpu, st.src, st.src_offset + c));
          break;
        case MscclStepType::recv:
          slot(b.gpu, st.dst, st.dst_offset + c) = received;
          break;
        case MscclStepType::recv_copy_send:
          slot(b.gpu, st.dst, st.dst_offset + c) = received;
          sent.values.push_back(received);
          break;
        case MscclStepType::recv_reduce_send:
          sent.values.push_back(Value::reduce(received, slot(b.gpu, st.src, st.src_offset + c)));
          break;
        case MscclStepType::recv_reduce_copy:
          slot(b.gpu, st.dst, st.dst_offset + c) =
              Value::reduce(received, slot(b.gpu, st.src, st.src_offset + c));
          break;
        case MscclStepType::recv_reduce_copy_send: {
          const Value v = Value::reduce(received, slot(b.gpu, st.src, st.src_offset + c));
          slot(b.gpu, st.dst, st.dst_offset + c) = v;
          sent.values.push_back(v);
          break;
        }
        default:
          break;
      }
    }
  }

  void local(const Block& b, const MscclStep& st) {
    if (st.type == MscclStepType::nop) return;
    // Read every source first: source and destination chunks may overlap.
    std::vector<Value> values;
    for (int c = 0; c < st.count; ++c) {
      const Value& src = slot(b.gpu, st.src, st.src_offset + c);
      values.push_back(st.type == MscclStepType::reduce
                           ? Value::reduce(slot(b.gpu, st.dst, st.dst_offset + c), src)
                           : src);
    }
    for (int c = 0; c < st.count; ++c)
      slot(b.gpu, st.dst, st.dst_offset + c) = values[static_cast<std::size_t>(c)];
  }

  const MscclProgram& p_;
  int max_call_;
  MscclPipe pipe_;
  std::vector<std::vector<Value>> input_, output_, scratch_;
  std::vector<Link> links_;
  std::vector<Block> blocks_;
  std::vector<int> first_;  // index of each GPU's first threadblock
  std::deque<int> ready_;
};

std::string times(std::uint32_t n) {
  return n == 2 ? "twice" : fmt::format("{} times", n);
}

// "misses rank 6; holds rank 2 twice": what chunk `chunk` of `gpu`'s result holds against what it should.
std::string describe(const MscclProgram& p, const Contributions& held, int gpu, int chunk) {
  const std::string head = fmt::format("rank {} output chunk {}", gpu, chunk);
  if (!held.defined)
    return head + " holds undefined data (a chunk nobody wrote reached it, or it was never written)";
  std::map<std::uint64_t, std::uint32_t> expected;
  const int per_rank = p.input_size();
  if (p.collective == MscclCollective::allreduce) {
    for (int q = 0; q < p.gpus; ++q) expected[origin_key(q, chunk)] = 1;
  } else {
    expected[origin_key(chunk / per_rank, chunk % per_rank)] = 1;
  }
  // Chunk indices are named only where they are not the obvious one.
  const int natural = p.collective == MscclCollective::allreduce ? chunk : per_rank == 1 ? 0 : -1;
  const auto name = [&](std::uint64_t key) {
    const auto q = static_cast<int>(key >> 32), c = static_cast<int>(key & 0xffffffffULL);
    return c == natural ? fmt::format("rank {}", q) : fmt::format("rank {}'s chunk {}", q, c);
  };
  std::map<std::uint64_t, std::uint32_t> actual(held.entries->begin(), held.entries->end());
  std::vector<std::string> missing, extra;
  for (const auto& [key, n] : expected)
    if (!actual.count(key)) missing.push_back(name(key));
  for (const auto& [key, n] : actual) {
    const auto want = expected.count(key) ? expected.at(key) : 0u;
    if (n > want) extra.push_back(want == 0 && n == 1 ? name(key) : name(key) + " " + times(n));
  }
  const auto list = [](const std::vector<std::string>& names) {
    std::string out;
    for (std::size_t k = 0; k < names.size() && k < 6; ++k) out += (k ? ", " : "") + names[k];
    if (names.size() > 6) out += fmt::format(" and {} more", names.size() - 6);
    return out;
  };
  std::string out = head;
  if (!missing.empty()) out += " misses " + list(missing);
  if (!extra.empty()) out += (missing.empty() ? " holds " : "; holds ") + list(extra);
  return out;
}

}  // namespace

MscclScheduleResult run_msccl_schedule(const MscclProgram& p, int max_call_chunks) {
  MscclScheduleResult result;
  Schedule<Fingerprint> schedule(p, max_call_chunks);
  if (!schedule.run()) {
    int line = 0;
    const std::string blocked = schedule.deadlock_report(line);
    const MscclPipe& pipe = schedule.pipe();
    result.problem = fmt::format(
        "{}: step: the program deadlocks ({}: a connection holds {} slices, a call sends {}{}): {}",
        p.where(line),
        p.protocol == Protocol::simple  ? "Simple"
        : p.protocol == Protocol::ll128 ? "LL128"
                                        : "LL",
        pipe.slots, pipe.slices,
        max_call_chunks < kMscclMaxCallChunks ? fmt::format(", a call carries at most {} chunk{}",
                                                            max_call_chunks, max_call_chunks == 1 ? "" : "s")
                                              : "",
        blocked);
    return result;
  }
  result.finished = true;
  // The expected fingerprint of each output chunk.
  const int per_rank = p.input_size();
  std::vector<std::uint64_t> expected(static_cast<std::size_t>(p.output_size()), 0);
  for (int c = 0; c < p.output_size(); ++c) {
    if (p.collective == MscclCollective::allreduce)
      for (int q = 0; q < p.gpus; ++q) expected[static_cast<std::size_t>(c)] += Fingerprint::of(q, c).sum;
    else
      expected[static_cast<std::size_t>(c)] = Fingerprint::of(c / per_rank, c % per_rank).sum;
  }
  for (int g = 0; g < p.gpus; ++g)
    for (int c = 0; c < p.output_size(); ++c) {
      const Fingerprint& f = schedule.result(g, c);
      if (f.defined && f.sum == expected[static_cast<std::size_t>(c)]) continue;
      // The same schedule again (it is deterministic), counting contributions exactly.
      Schedule<Contributions> exact(p, max_call_chunks);
      exact.run();
      result.problem =
          fmt::format("{}: algo: the program does not compute an {}: {}", p.where(p.line),
                      msccl_collective_name(p.collective), describe(p, exact.result(g, c), g, c));
      return result;
    }
  return result;
}

std::string verify_msccl_program(const MscclProgram& p) {
  std::vector<int> counts;
  for (const MscclGpu& g : p.gpu)
    for (const MscclThreadblock& tb : g.threadblocks)
      for (const MscclStep& s : tb.steps)
        if (msccl_step_sends(s.type) || msccl_step_receives(s.type)) counts.push_back(s.count);
  std::sort(counts.begin(), counts.end());
  counts.erase(std::unique(counts.begin(), counts.end()), counts.end());
  std::set<std::vector<int>> cuts;
  std::string wrong;
  for (int m = kMscclMaxCallChunks; m >= 1; --m) {
    std::vector<int> cut;
    for (int c : counts) cut.push_back((c + m - 1) / m);
    if (!cuts.insert(cut).second) continue;
    const MscclScheduleResult r = run_msccl_schedule(p, m);
    if (!r.finished) throw InputError(r.problem);
    if (wrong.empty()) wrong = r.problem;
  }
  return wrong;
}

}  // namespace aggsim
