#pragma once
// The only code that touches SimGrid mailboxes. Messages between a pair of ranks on one channel are
// delivered in order (like MPI's non-overtaking rule). Sends are rendezvous: a transfer starts when
// both sides have posted, as for large MPI messages.
#include <algorithm>
#include <cstdint>
#include <deque>
#include <limits>
#include <memory>
#include <simgrid/s4u.hpp>
#include <utility>
#include <vector>

#include "sim/comm/local_network.hpp"
#include "sim/comm/payload.hpp"
#include "sim/metrics/trace.hpp"

namespace aggsim {

namespace sg4 = simgrid::s4u;

class Comm;

// One aggregation call as the ranks saw it. Its transfers: from the start of the first transfer a
// rank received (both sides posted) to the end of the last, counting only transfers that started
// after the rank entered the call (a push a parameter server left for later belongs to the call
// that sent it); empty when no rank received anything. And the ranks' own part of it, their
// communication (Comm::note_activity): the transfers they waited for, the latencies they paid, the
// reductions they made, not a compressor's encoding before it or decoding after it. The call's
// record (collectives.csv) spans both: a base latency before the first byte, a pipeline's drain
// and last hop after the last one, the reduction of what arrived last.
struct TransferWindow {
  static constexpr double kNever = -std::numeric_limits<double>::infinity();
  double first_start = std::numeric_limits<double>::infinity();
  double last_end = kNever;
  double part_start = std::numeric_limits<double>::infinity();  // the ranks' part: first and last
  double part_end = kNever;
  bool empty() const { return !(first_start <= last_end); }
  void add(double start, double end) {
    first_start = std::min(first_start, start);
    last_end = std::max(last_end, end);
  }
  void add(const TransferWindow& o) {
    if (!o.empty()) add(o.first_start, o.last_end);
    part_start = std::min(part_start, o.part_start);
    part_end = std::max(part_end, o.part_end);
  }
  // From the first transfer or part, whichever began first, to the last, whichever ended last.
  double call_start() const { return std::min(first_start, part_start); }
  double call_end() const { return std::max(last_end, part_end); }
  // The same window `by` seconds later (a replayed step's record of the step it repeats).
  TransferWindow shifted(double by) const {
    TransferWindow w = *this;
    w.first_start += by;
    w.last_end += by;
    w.part_start += by;
    w.part_end += by;
    return w;
  }
};

// What one rank showed the network during one step, for the replay of repeated steps
// (sim/engine/replay.hpp): every transfer it posted (kind, peer, channel, bytes) and all work it
// charged to its host (flops), folded in order into one hash, the handles wait_any chose, and when the
// transfers it received started (both sides posted) and ended.
struct StepTape {
  static constexpr std::uint64_t kEmpty = 0xcbf29ce484222325ULL;
  std::uint64_t posts = kEmpty;
  // Work is summed, not folded in order: a rank's compute and communication actors charge it in an
  // order that depends on timing, which a replayed step does not have.
  std::uint64_t work = 0;
  std::vector<std::uint32_t> chosen;
  double first_start = std::numeric_limits<double>::infinity();
  double last_end = -std::numeric_limits<double>::infinity();
  // The transfer window of each aggregation call of the step, in call order (collectives.csv of a
  // replayed step is this record shifted to the replayed step's start).
  std::vector<TransferWindow> calls;
  // The step's transfers interleave by timing (Comm::refuse_replay): no step equals it.
  bool unrepeatable = false;
  bool same_transfers(const StepTape& o) const {
    return !unrepeatable && !o.unrepeatable && posts == o.posts && work == o.work && chosen == o.chosen;
  }
};

class SendHandle {
 public:
  SendHandle() = default;
  explicit SendHandle(sg4::CommPtr comm, Tracer* tracer = nullptr, CommSpan span = {}, Comm* owner = nullptr)
      : comm_(std::move(comm)), tracer_(tracer), span_(span), owner_(owner) {}
  // Returns when the transfer ended (now, for an empty handle).
  double wait();
  bool valid() const { return comm_ != nullptr; }
  bool done() const;  // completed (or already waited), so wait() returns at once

 private:
  // A replayed step's sends are delivered at once: their handles are empty (done, not valid).
  sg4::CommPtr comm_;
  Tracer* tracer_ = nullptr;  // records the transfer when waited for (output.trace)
  CommSpan span_;
  Comm* owner_ = nullptr;  // the sender, whose call the wait belongs to
};

// Where SimGrid writes the sender's payload pointer: a stable address that outlives handle moves.
// Slots are recycled, so posting a receive allocates nothing once the pool is warm.
class SlotPool {
 public:
  Payload** acquire();
  void release(Payload** slot) { free_.push_back(slot); }

 private:
  std::deque<Payload*> slots_;  // a deque never moves its elements
  std::vector<Payload**> free_;
};

class RecvHandle {
 public:
  RecvHandle() = default;
  RecvHandle(sg4::CommPtr comm, Payload** slot, SlotPool* pool, Tracer* tracer = nullptr, CommSpan span = {})
      : comm_(std::move(comm)), slot_(slot), pool_(pool), tracer_(tracer), span_(span) {}
  // A receive of a replayed step: message `seq` of `key` on the in-process network.
  RecvHandle(LocalNetwork* local, LocalNetwork::Key key, std::uint64_t seq, Comm* owner)
      : local_(local), key_(key), seq_(seq), owner_(owner) {}
  // A stream of a replayed step, which carries nothing: done at once, wait() gives its size.
  static RecvHandle replayed_stream(Comm* owner) {
    RecvHandle h;
    h.settled_ = true;
    h.owner_ = owner;
    return h;
  }
  // `arrived` (optional) receives when the transfer ended.
  Payload wait(double* arrived = nullptr);
  bool valid() const { return comm_ != nullptr || local_ != nullptr || settled_; }
  bool done() const;  // completed, so wait() returns at once

 private:
  friend class Comm;
  bool settled_ = false;  // a replayed step's stream: nothing to wait for
  LocalNetwork* local_ = nullptr;
  LocalNetwork::Key key_ = 0;
  std::uint64_t seq_ = 0;
  Comm* owner_ = nullptr;
  sg4::CommPtr comm_;
  Payload** slot_ = nullptr;  // SimGrid writes the sender's pointer here; back to pool_ once read
  SlotPool* pool_ = nullptr;
  Tracer* tracer_ = nullptr;
  CommSpan span_;
};

// Counters of what one rank sent.
struct CommCounters {
  std::uint64_t bytes_sent = 0;
  std::uint64_t messages_sent = 0;
};

class Comm {
 public:
  Comm(int rank, int world_size) : rank_(rank), size_(world_size) {}

  int rank() const { return rank_; }
  int size() const { return size_; }
  // Ranks 0..size-1 of this Comm are global ranks first, first + stride, ... of a larger run (a
  // data-parallel group of a parallel layout): mailboxes and the trace name global ranks, so the
  // groups' messages never meet.
  void number_as(int first, int stride) {
    global_first_ = first;
    global_stride_ = stride;
  }
  int global_rank(int r) const { return global_first_ + global_stride_ * r; }

  // `rate` (bytes/s, 0: none) caps the transfer: a sender that cannot feed its links faster.
  void send(int dst, Payload payload, int channel = 0, double rate = 0);
  Payload recv(int src, int channel = 0);
  SendHandle isend(int dst, Payload payload, int channel = 0, double rate = 0);
  RecvHandle irecv(int src, int channel = 0);
  // Posts the receive and the send together and waits for both (no deadlock in rings/exchanges).
  Payload sendrecv(int dst, Payload payload, int src, int channel = 0);

  // A flow-level stream: one message of `bytes` (no data) standing for a pipeline's pieces on one
  // channel edge, shown as a stream in the trace; `rate` (bytes/s, 0: none) caps it, as a pipeline
  // runs no edge faster than its slowest. `dst` receives it with accept_stream. A stream standing
  // for `messages` streams of one route (merged) counts as that many messages sent. In a replayed
  // step a stream carries nothing and its time comes from the record, so it is not delivered at
  // all: both posts enter the tape and the counters, and both handles are done at once (a stream
  // orders nothing; whoever needs its peers' data meets them otherwise).
  SendHandle start_stream(int dst, std::uint64_t bytes, int channel, double rate = 0, int messages = 1);
  RecvHandle accept_stream(int src, int channel);
  // Simulated time passes (a pipeline's fill, a call's base latency), except in a replayed step,
  // whose times come from the record.
  void pause_until(double when) const;

  // While on, the transfers this rank posts carry no latency in the network: their receiver
  // charges it (sim/comm/receiver_latency.hpp; only where receiver_latency::available()).
  void charge_latency_at_receiver(bool on) { latency_at_receiver_ = on; }

  // Waits for all sends (e.g. a broadcast's fan-out).
  static void wait_all(std::vector<SendHandle>& sends);
  // Blocks until one of the valid handles has completed and returns its index (its wait() then
  // returns at once): servers serving whichever worker arrives first. Needs one valid handle.
  // In a replayed step it returns the index the recorded step's wait_any returned.
  static std::size_t wait_any(const std::vector<RecvHandle>& recvs);

  // Replay of repeated steps (sim/engine/replay.hpp). With `local` set, messages go over the
  // in-process network (no SimGrid transfer, no simulated time, no work charged: the step's timing
  // comes from the recorded step), and wait_any returns `chosen`'s indices in order. Null: SimGrid.
  void replay_over(LocalNetwork* local, const std::vector<std::uint32_t>* chosen) {
    local_ = local;
    chosen_ = chosen;
    next_chosen_ = 0;
  }
  bool replaying() const { return local_ != nullptr; }
  // Whether to keep the tape at all: only a run that may replay reads it (an unread tape would
  // also grow with every wait_any).
  void record_steps(bool on) { recording_ = on; }
  // Work charged to the rank's host (flops) enters the record too: a step that computes otherwise
  // takes another time.
  void note_work(double flops) const;
  // The current step cannot be replayed (its transfers interleave by timing, e.g. a call moved
  // piece by piece): its record equals no other step's.
  void refuse_replay() const {
    if (recording_) tape_.unrepeatable = true;
  }
  // The record of this rank's transfers since the last call (one step's).
  StepTape take_tape() { return std::exchange(tape_, StepTape{}); }
  // An aggregation call begins now: the window of its transfers starts empty.
  void begin_call();
  // The call ends now: the window of the transfers this rank received since begin_call, with its own
  // part of the call (one aggregation call's; empty in a replayed step, which transfers nothing and
  // whose times come from the record); it also enters the step's tape.
  TransferWindow take_call_window();
  // The rank communicated from `start` to `end` in the current call: a latency it paid, a reduction
  // of received data (the transfers it waits for note themselves).
  void note_activity(double start, double end) const;

  const CommCounters& counters() const { return counters_; }
  // One transfer of this rank carried `bytes` of `other`'s (a node's rings merged into one flow):
  // they, and one message, count as sent by `other`, as they would have been on its own.
  void count_as_sent_by(Comm& other, std::uint64_t bytes);
  // Timeline recording (output.trace); null when off.
  void set_tracer(Tracer* tracer) { tracer_ = tracer; }
  Tracer* tracer() const { return tracer_; }
  // What reducing received data into this rank's own costs its host, in flops per byte reduced
  // (0: free); charge_reduce (sim/api/rank_context.hpp) spends it.
  void set_reduce_flops_per_byte(double f) { reduce_flops_per_byte_ = f; }
  double reduce_flops_per_byte() const { return reduce_flops_per_byte_; }

 private:
  struct BoxEntry;
  // The mailbox to (sending) or from `peer` on `channel`, created on first use.
  BoxEntry& box(int peer, bool sending, int channel);

  // This rank's mailboxes, sorted by key (channel, direction, peer) for a binary search: most ranks
  // talk to a handful of peers, a server to all of them; a table indexed by peer would cost
  // O(p) per rank, O(p^2) in all.
  struct BoxEntry {
    std::uint64_t key;
    sg4::Mailbox* box;
    std::uint64_t posted = 0;  // messages this rank posted on it: the trace pairs sends and receives
  };

  friend class RecvHandle;
  friend class SendHandle;
  void note_transfer(double start, double end) const;
  SendHandle post_send(int dst, Payload payload, int channel, double rate, bool stream, int messages = 1);
  RecvHandle post_receive(int src, int channel, bool stream);
  void check_peer(int peer) const;
  void note_post(std::uint64_t kind, int peer, int channel, std::uint64_t bytes) const;
  void note_received(const sg4::Comm& transfer);
  std::size_t next_recorded_choice(std::size_t handles);

  int rank_;
  int size_;
  int global_first_ = 0, global_stride_ = 1;
  CommCounters counters_;
  bool recording_ = false;
  mutable StepTape tape_;  // recording what happened is not a change of the Comm
  TransferWindow call_window_;
  double call_entry_ = 0;
  // The rank's part of the current call (note_activity): a record of what happened, as the tape.
  mutable double activity_first_ = std::numeric_limits<double>::infinity();
  mutable double activity_last_ = TransferWindow::kNever;
  LocalNetwork* local_ = nullptr;
  const std::vector<std::uint32_t>* chosen_ = nullptr;
  std::size_t next_chosen_ = 0;
  Tracer* tracer_ = nullptr;
  double reduce_flops_per_byte_ = 0;
  bool latency_at_receiver_ = false;
  std::vector<BoxEntry> boxes_;
  std::size_t last_send_box_ = 0, last_recv_box_ = 0;  // where box() found its last answer
  SlotPool slots_;
};

}  // namespace aggsim
