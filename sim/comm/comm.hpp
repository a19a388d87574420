#pragma once
// The only code that touches SimGrid mailboxes. Messages between a pair of ranks on one channel are
// delivered in order (like MPI's non-overtaking rule). Sends are rendezvous: a transfer starts when
// both sides have posted, as for large MPI messages.
#include <cstdint>
#include <deque>
#include <memory>
#include <simgrid/s4u.hpp>
#include <vector>

#include "sim/comm/payload.hpp"
#include "sim/metrics/trace.hpp"

namespace aggsim {

namespace sg4 = simgrid::s4u;

class SendHandle {
 public:
  SendHandle() = default;
  explicit SendHandle(sg4::CommPtr comm, Tracer* tracer = nullptr, CommSpan span = {})
      : comm_(std::move(comm)), tracer_(tracer), span_(span) {}
  void wait();
  bool valid() const { return comm_ != nullptr; }
  bool done() const;  // completed (or already waited), so wait() returns at once

 private:
  sg4::CommPtr comm_;
  Tracer* tracer_ = nullptr;  // records the transfer when waited for (output.trace)
  CommSpan span_;
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
  Payload wait();
  bool valid() const { return comm_ != nullptr; }
  bool done() const;  // completed, so wait() returns at once

 private:
  friend class Comm;
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

  void send(int dst, Payload payload, int channel = 0);
  Payload recv(int src, int channel = 0);
  SendHandle isend(int dst, Payload payload, int channel = 0);
  RecvHandle irecv(int src, int channel = 0);
  // Posts the receive and the send together and waits for both (no deadlock in rings/exchanges).
  Payload sendrecv(int dst, Payload payload, int src, int channel = 0);

  // Waits for all sends (e.g. a broadcast's fan-out).
  static void wait_all(std::vector<SendHandle>& sends);
  // Blocks until one of the valid handles has completed and returns its index (its wait() then
  // returns at once): servers serving whichever worker arrives first. Needs one valid handle.
  static std::size_t wait_any(const std::vector<RecvHandle>& recvs);

  const CommCounters& counters() const { return counters_; }
  // Timeline recording (output.trace); null when off.
  void set_tracer(Tracer* tracer) { tracer_ = tracer; }
  Tracer* tracer() const { return tracer_; }
  // What reducing received data into this rank's own costs its host, in flops per byte reduced
  // (0: free); charge_reduce (sim/api/rank_context.hpp) spends it.
  void set_reduce_flops_per_byte(double f) { reduce_flops_per_byte_ = f; }
  double reduce_flops_per_byte() const { return reduce_flops_per_byte_; }

 private:
  struct BoxEntry;
  BoxEntry& box(int src, int dst, int channel);

  // This rank's mailboxes, sorted by key (channel, direction, peer) for a binary search: most ranks
  // talk to a handful of peers, a server to all of them; a table indexed by peer would cost
  // O(p) per rank, O(p^2) in all.
  struct BoxEntry {
    std::uint64_t key;
    sg4::Mailbox* box;
    std::uint64_t posted = 0;  // messages this rank posted on it: the trace pairs sends and receives
  };

  int rank_;
  int size_;
  CommCounters counters_;
  Tracer* tracer_ = nullptr;
  double reduce_flops_per_byte_ = 0;
  std::vector<BoxEntry> boxes_;
  SlotPool slots_;
};

}  // namespace aggsim
