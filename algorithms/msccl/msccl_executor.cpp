#include "algorithms/msccl/msccl_executor.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>

#include "algorithms/msccl/schedule.hpp"
#include "algorithms/transport/slot_connection.hpp"
#include "sim/api/partition.hpp"

namespace aggsim {

namespace {

// Apart from every other message between the same ranks (NCCL's use 1 << 20 + channel).
constexpr int kMscclTag = 3 << 20;

// Chunk data travels as one vector of the chunks' values back to back; `indices` holds their sizes.
void pack(Payload& out, const Eigen::VectorXf& chunk) {
  const Eigen::Index at = out.values.size();
  out.values.conservativeResize(at + chunk.size());
  out.values.segment(at, chunk.size()) = chunk;
  out.indices.push_back(static_cast<std::uint32_t>(chunk.size()));
}

std::vector<Eigen::VectorXf> unpack(const Payload& in) {
  std::vector<Eigen::VectorXf> chunks;
  Eigen::Index at = 0;
  for (const std::uint32_t size : in.indices) {
    const auto n = static_cast<Eigen::Index>(size);
    if (at + n > in.values.size()) break;
    chunks.emplace_back(in.values.segment(at, n));
    at += n;
  }
  return chunks;
}

}  // namespace

struct MscclExecutor::Link {
  sg4::SemaphorePtr slots;
  int ends_left = 2;
};

// One rank's state during one call.
struct MscclExecutor::RankCall {
  const MscclProgram* program = nullptr;
  std::uint64_t id = 0;
  int rank = 0;
  Comm* comm = nullptr;
  sg4::Host* host = nullptr;
  Tracer* tracer = nullptr;
  const ReduceOp* op = nullptr;
  bool math = false;
  MscclPipe pipe;
  int max_call = 1;        // chunks per call (the runtime's maxAllowedCount)
  std::int64_t loops = 1;  // the runtime's loop iterations (msccl_loops)
  double chunk_bytes = 0;  // data bytes of each of the program's chunks
  // Data bytes of each chunk in loop iteration l: a piece of NCCL's ring chunk, the last one less.
  double loop_bytes(std::int64_t l) const {
    return std::max(0.0, std::min(pipe.chunk_bytes, chunk_bytes - static_cast<double>(l) * pipe.chunk_bytes));
  }
  std::vector<Eigen::VectorXf> storage[3];  // input, output, scratch chunks (proxy values)
  // Steps each threadblock has done, over all loop iterations; threadblocks wait on it.
  std::vector<std::int64_t> done;
  sg4::MutexPtr mutex = sg4::Mutex::create();
  sg4::ConditionVariablePtr progressed = sg4::ConditionVariable::create();
  std::uint64_t steps = 0;
  std::map<std::tuple<int, int, int>, double> bytes;

  Eigen::VectorXf& chunk(MscclBuffer b, int offset) {
    const MscclLocation at = msccl_locate(*program, rank, b, offset);
    return storage[static_cast<int>(at.storage)][static_cast<std::size_t>(at.index)];
  }

  // The rank's buffers, chunk by chunk (proxy values): an all-reduce's input is its vector in k
  // chunks; an all-gather's input is its vector in k / p chunks, its output everyone's.
  void load_input(const Eigen::VectorXf& values);
  // The result where the runtime leaves it, into `values`; an all-gather's `world` vectors are
  // reduced in rank order (the caller charges the reduction's time).
  void store_result(Eigen::VectorXf& values, int world);

  // The stages of one step of threadblock `tb` in loop iteration `loop`, in the order it runs them.
  void wait_for_dependency(const MscclStep& st, std::int64_t loop);
  void apply_local(const MscclStep& st);  // copy or reduce between this rank's own chunks
  void transfer(const MscclThreadblock& tb, const MscclStep& st, std::int64_t loop, bool data,
                double efficiency, SlotInbox* in, SlotOutbox* out);
  void step_done(const MscclThreadblock& tb, const MscclStep& st, double start, const std::string& lane);
};

void MscclExecutor::RankCall::load_input(const Eigen::VectorXf& values) {
  const MscclProgram& prog = *program;
  const std::int64_t n = values.size();
  const bool aliased_output = prog.inplace && prog.collective == MscclCollective::allreduce;
  const bool aliased_input = prog.inplace && prog.collective == MscclCollective::allgather;
  if (!aliased_input) storage[0].resize(static_cast<std::size_t>(prog.input_size()));
  if (!aliased_output) storage[1].resize(static_cast<std::size_t>(prog.output_size()));
  storage[2].resize(static_cast<std::size_t>(prog.gpu[static_cast<std::size_t>(rank)].scratch_chunks));
  for (int c = 0; c < prog.input_size(); ++c) {
    const Range r = chunk_range(n, prog.input_size(), c);
    chunk(MscclBuffer::input, c) = values.segment(r.begin, r.count);
  }
}

void MscclExecutor::RankCall::store_result(Eigen::VectorXf& values, int world) {
  const MscclProgram& prog = *program;
  const int k = prog.chunks_per_loop;
  const std::int64_t n = values.size();
  const auto& result = storage[static_cast<int>(msccl_result_buffer(prog))];
  if (prog.collective == MscclCollective::allreduce) {
    for (int c = 0; c < k; ++c) {
      const Range r = chunk_range(n, k, c);
      const Eigen::VectorXf& v = result[static_cast<std::size_t>(c)];
      if (v.size() == r.count) values.segment(r.begin, r.count) = v;
    }
    return;
  }
  // Every rank's vector, reduced in rank order.
  const int per_rank = prog.input_size();
  const auto vector_of = [&](int q) {
    Eigen::VectorXf v(n);
    for (int c = 0; c < per_rank; ++c) {
      const Range r = chunk_range(n, per_rank, c);
      const Eigen::VectorXf& got = result[static_cast<std::size_t>(q * per_rank + c)];
      if (got.size() == r.count) v.segment(r.begin, r.count) = got;
    }
    return v;
  };
  Eigen::VectorXf acc = vector_of(0);
  for (int q = 1; q < world; ++q) op->combine(acc, vector_of(q));
  values = std::move(acc);
}

void MscclExecutor::RankCall::wait_for_dependency(const MscclStep& st, std::int64_t loop) {
  if (st.dep_tb < 0) return;
  const MscclGpu& gpu = program->gpu[static_cast<std::size_t>(rank)];
  const std::int64_t target =
      loop * static_cast<std::int64_t>(gpu.threadblocks[static_cast<std::size_t>(st.dep_tb)].steps.size()) +
      st.dep_step + 1;
  std::unique_lock<sg4::Mutex> lock(*mutex);
  while (done[static_cast<std::size_t>(st.dep_tb)] < target) progressed->wait(lock);
}

void MscclExecutor::RankCall::apply_local(const MscclStep& st) {
  std::vector<Eigen::VectorXf> values;
  for (int c = 0; c < st.count; ++c) {
    Eigen::VectorXf v = chunk(st.src, st.src_offset + c);
    if (st.type == MscclStepType::reduce) {
      const Eigen::VectorXf& dst = chunk(st.dst, st.dst_offset + c);
      if (dst.size() == v.size()) {
        Eigen::VectorXf acc = dst;
        op->combine(acc, v);
        v = std::move(acc);
      }
    }
    values.push_back(std::move(v));
  }
  for (int c = 0; c < st.count; ++c) chunk(st.dst, st.dst_offset + c) = std::move(values[static_cast<std::size_t>(c)]);
}

// A transfer step in runtime calls of at most `max_call` chunks, each call in the protocol's
// slices; the chunks' values ride on the first slice when `data`.
void MscclExecutor::RankCall::transfer(const MscclThreadblock& tb, const MscclStep& st, std::int64_t loop,
                                       bool data, double efficiency, SlotInbox* in, SlotOutbox* out) {
  const bool receives = msccl_step_receives(st.type), sends = msccl_step_sends(st.type);
  const int slices = pipe.slices;
  const int calls = (st.count + max_call - 1) / max_call;
  for (int j = 0; j < calls; ++j) {
    const int first = j * max_call, count = std::min(max_call, st.count - first);
    const double slice_bytes = count * loop_bytes(loop) / slices;
    const auto wire = static_cast<std::uint64_t>(std::ceil(slice_bytes / efficiency));
    for (int slice = 0; slice < slices; ++slice) {
      Payload got;
      if (receives) got = in->take();
      Payload sent;
      sent.wire_bytes = wire;
      if (data && slice == 0) {
        const std::vector<Eigen::VectorXf> received = unpack(got);
        for (int c = 0; c < count; ++c) {
          Eigen::VectorXf v;
          if (receives && static_cast<std::size_t>(c) < received.size()) v = received[static_cast<std::size_t>(c)];
          if (msccl_step_reduces(st.type)) {
            const Eigen::VectorXf& src = chunk(st.src, st.src_offset + first + c);
            if (src.size() == v.size()) op->combine(v, src);
          } else if (!receives) {
            v = chunk(st.src, st.src_offset + first + c);
          }
          if (msccl_step_writes_dst(st.type)) chunk(st.dst, st.dst_offset + first + c) = v;
          if (sends) pack(sent, v);
        }
      }
      if (sends) {
        bytes[{rank, tb.send_peer, tb.channel}] += static_cast<double>(wire);
        out->put(std::move(sent));
      }
      if (receives) in->release();
    }
  }
}

// Counts the step, wakes the threadblocks that wait on it and traces it.
void MscclExecutor::RankCall::step_done(const MscclThreadblock& tb, const MscclStep& st, double start,
                                        const std::string& lane) {
  ++steps;
  {
    std::unique_lock<sg4::Mutex> lock(*mutex);
    ++done[static_cast<std::size_t>(tb.id)];
    if (st.has_dep) progressed->notify_all();
  }
  if (tracer) tracer->work({rank, msccl_step_type_code(st.type), start, sg4::Engine::get_clock(), tb.id, lane});
}

MscclExecutor::MscclExecutor(std::vector<std::shared_ptr<const MscclProgram>> programs,
                             const std::vector<sg4::Host*>& hosts, ProtocolCosts costs)
    : programs_(std::move(programs)),
      view_(
          [&] {
            std::vector<int> members(hosts.size());
            for (std::size_t r = 0; r < hosts.size(); ++r) members[r] = static_cast<int>(r);
            return members;
          }(),
          hosts),
      costs_(costs),
      calls_made_(hosts.size(), 0) {}

MscclExecutor::~MscclExecutor() = default;

const MscclProgram& MscclExecutor::select(double total_bytes) const {
  for (const auto& p : programs_)
    if (total_bytes >= static_cast<double>(p->min_bytes) &&
        (p->max_bytes == 0 || total_bytes <= static_cast<double>(p->max_bytes)))
      return *p;
  return *programs_.front();  // the loader checked that the programs cover every size
}

MscclExecutor::Link& MscclExecutor::link(const MscclProgram& prog, std::uint64_t call, int from, int to,
                                         int channel) {
  auto& slot = links_[{call, from, to, channel}];
  if (!slot) {
    slot = std::make_unique<Link>();
    slot->slots = sg4::Semaphore::create(static_cast<unsigned>(msccl_pipe(prog.protocol).slots));
    // The ends that will leave it: the threadblocks of this connection (one may be missing when
    // the other has nothing to move).
    slot->ends_left = 0;
    for (const MscclThreadblock& tb : prog.gpu[static_cast<std::size_t>(from)].threadblocks)
      if (tb.send_peer == to && tb.channel == channel) ++slot->ends_left;
    for (const MscclThreadblock& tb : prog.gpu[static_cast<std::size_t>(to)].threadblocks)
      if (tb.recv_peer == from && tb.channel == channel) ++slot->ends_left;
  }
  return *slot;
}

void MscclExecutor::leave_link(std::uint64_t call, int from, int to, int channel) {
  const auto it = links_.find({call, from, to, channel});
  if (it != links_.end() && --it->second->ends_left == 0) links_.erase(it);
}

double MscclExecutor::arrival_delay(int from, int to, Protocol proto) {
  auto [it, fresh] = route_latency_.emplace(std::pair{from, to}, 0.0);
  if (fresh) {
    std::vector<sg4::Link*> route;
    view_.host_of(from)->route_to(view_.host_of(to), route, &it->second);
  }
  return it->second + costs_.hop(view_.hop_class(from, to), proto);
}

void MscclExecutor::run(RankContext& ctx, Gradient& grad, const ReduceOp& op) {
  const int p = view_.size();
  const double element_bytes = static_cast<double>(grad.wire_elements) * kFloatBytes;
  const MscclProgram* program = nullptr;
  {
    const double probe =
        element_bytes * (programs_.front()->collective == MscclCollective::allgather ? p : 1);
    program = &select(probe);
  }
  const MscclProgram& prog = *program;
  const int k = prog.chunks_per_loop;
  const double total = element_bytes * (prog.collective == MscclCollective::allgather ? p : 1);
  RankCall call;
  call.program = &prog;
  call.id = calls_made_[static_cast<std::size_t>(ctx.rank)]++;
  call.rank = ctx.rank;
  call.comm = ctx.comm;
  call.host = ctx.host;
  call.tracer = ctx.comm->tracer();
  call.op = &op;
  call.math = grad.values.size() > 0;
  call.pipe = msccl_pipe(prog.protocol);
  call.max_call = msccl_max_call_chunks(prog, total);
  // The runtime's loop: each chunk in pieces of NCCL's ring chunk size (the scenario's size was
  // checked to need at most kMscclMaxLoops iterations).
  call.chunk_bytes = total / k;
  call.loops = msccl_loops(prog, total);
  if (ctx.rank == 0) ++program_calls_[prog.name];
  if (ctx.choice) {
    ctx.choice->protocol = protocol_name(prog.protocol);
    ctx.choice->channels = prog.channels;
  }

  const MscclGpu& gpu = prog.gpu[static_cast<std::size_t>(ctx.rank)];
  if (call.math) call.load_input(grad.values);
  call.done.assign(gpu.threadblocks.size(), 0);

  ctx.comm->pause_until(sg4::Engine::get_clock() + costs_.base(NcclAlgorithm::ring, prog.protocol));
  std::vector<sg4::ActorPtr> actors;
  for (const MscclThreadblock& tb : gpu.threadblocks)
    actors.push_back(sg4::Actor::create(fmt::format("msccl-{}-tb{}", ctx.rank, tb.id), ctx.host,
                                        [this, &call, &tb] { run_threadblock(call, tb); }));
  for (auto& actor : actors) actor->join();
  steps_executed_ += call.steps;
  for (const auto& [key, bytes] : call.bytes) bytes_[key] += bytes;
  if (call.math) call.store_result(grad.values, p);
  // An all-gather's ranks each reduce the p vectors gathered.
  if (prog.collective == MscclCollective::allgather)
    charge_reduce(*ctx.comm, static_cast<std::uint64_t>(p - 1) * grad.wire_elements * kFloatBytes);
  if (call.math) op.finalize(grad.values, ctx.world);
}

void MscclExecutor::run_threadblock(RankCall& call, const MscclThreadblock& tb) {
  const MscclProgram& prog = *call.program;
  const Protocol proto = prog.protocol;
  const int slices = call.pipe.slices;
  // Messages on this threadblock's receiving connection in this call.
  std::int64_t expected = 0;
  for (const MscclStep& st : tb.steps)
    if (msccl_step_receives(st.type)) expected += (st.count + call.max_call - 1) / call.max_call;
  expected *= call.loops * slices;
  std::unique_ptr<SlotInbox> in;
  std::unique_ptr<SlotOutbox> out;
  if (tb.recv_peer >= 0)
    in = std::make_unique<SlotInbox>(*call.comm, tb.recv_peer, kMscclTag + tb.channel, call.pipe.slots, expected,
                                 arrival_delay(tb.recv_peer, call.rank, proto),
                                 link(prog, call.id, tb.recv_peer, call.rank, tb.channel).slots);
  if (tb.send_peer >= 0)
    out = std::make_unique<SlotOutbox>(*call.comm, call.host, tb.send_peer, kMscclTag + tb.channel,
                                   link(prog, call.id, call.rank, tb.send_peer, tb.channel).slots,
                                   fmt::format("msccl-{}-tb{}-send", call.rank, tb.id));
  const std::string lane =
      fmt::format("tb {} (send {}, recv {}, channel {})", tb.id, tb.send_peer, tb.recv_peer, tb.channel);
  const double efficiency = costs_.eff(proto);
  for (std::int64_t l = 0; l < call.loops; ++l) {
    const bool data = call.math && l == 0;  // the whole chunks' values move in the first iteration
    for (const MscclStep& st : tb.steps) {
      call.wait_for_dependency(st, l);
      const double start = sg4::Engine::get_clock();
      if (msccl_step_receives(st.type) || msccl_step_sends(st.type))
        call.transfer(tb, st, l, data, efficiency, in.get(), out.get());
      else if (data && st.type != MscclStepType::nop)
        call.apply_local(st);
      call.step_done(tb, st, start, lane);
    }
  }
  if (out) out->flush();
  if (tb.recv_peer >= 0) leave_link(call.id, tb.recv_peer, call.rank, tb.channel);
  if (tb.send_peer >= 0) leave_link(call.id, call.rank, tb.send_peer, tb.channel);
}

std::vector<SummaryField> MscclExecutor::summary() const {
  std::string names;
  for (const auto& p : programs_) names += (names.empty() ? "" : ", ") + p->name;
  std::vector<SummaryField> fields;
  fields.push_back({"msccl_program", 0, names});
  std::vector<std::pair<std::string, double>> calls;
  for (const auto& p : programs_)
    if (program_calls_.count(p->name))
      calls.emplace_back(p->name, static_cast<double>(program_calls_.at(p->name)));
  fields.push_back({"msccl_calls", 0, std::nullopt, calls});
  fields.push_back({"msccl_steps_executed", static_cast<double>(steps_executed_)});
  std::vector<std::pair<std::string, double>> bytes;
  for (const auto& [key, value] : bytes_) {
    const auto [from, to, channel] = key;
    bytes.emplace_back(fmt::format("{}->{} ch{}", from, to, channel), value);
  }
  fields.push_back({"msccl_bytes_per_connection", 0, std::nullopt, bytes});
  return fields;
}

}  // namespace aggsim
