#pragma once
// The only code that touches SimGrid mailboxes. Messages between a pair of ranks on one channel are
// delivered in order (like MPI's non-overtaking rule). Sends are rendezvous: a transfer starts when
// both sides have posted, as for large MPI messages.
#include <simgrid/s4u.hpp>

#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "sim/comm/payload.hpp"

namespace aggsim {

namespace sg4 = simgrid::s4u;

class SendHandle {
 public:
  SendHandle() = default;
  explicit SendHandle(sg4::CommPtr comm) : comm_(std::move(comm)) {}
  void wait();
  bool valid() const { return comm_ != nullptr; }
  bool done() const;  // completed (or already waited), so wait() returns at once

 private:
  sg4::CommPtr comm_;
};

class RecvHandle {
 public:
  RecvHandle() = default;
  RecvHandle(sg4::CommPtr comm, std::unique_ptr<Payload*> slot) : comm_(std::move(comm)), slot_(std::move(slot)) {}
  Payload wait();
  bool valid() const { return comm_ != nullptr; }
  bool done() const;  // completed, so wait() returns at once

 private:
  sg4::CommPtr comm_;
  std::unique_ptr<Payload*> slot_;  // SimGrid writes the sender's pointer here
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

  const CommCounters& counters() const { return counters_; }

 private:
  sg4::Mailbox* box(int src, int dst, int channel);

  int rank_;
  int size_;
  CommCounters counters_;
  std::unordered_map<std::uint64_t, sg4::Mailbox*> boxes_;
};

}  // namespace aggsim
