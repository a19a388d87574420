#pragma once
// A connection between two ranks that moves pieces one message each, with a window of slots, as
// NCCL's and MSCCL's runtimes do between two GPUs: the receiving end (SlotInbox) and the sending
// end (SlotOutbox). NCCL's chunk-level movement (algorithms/nccl/chunk_connection.hpp) and MSCCL's
// executor both run on it.
#include <fmt/format.h>

#include <deque>
#include <simgrid/s4u.hpp>
#include <string>

#include "sim/comm/comm.hpp"

namespace aggsim {

// A connection's receiving end: `window` receives posted ahead (as many as the sender may have in
// flight), `expected` in all, each piece usable `delay` after its bytes arrived (transfers carry
// no latency of their own: the route's and the protocol's per-hop cost are charged here).
// `slots`, when given, are the connection's slots shared with the sender: release() frees one once
// the receiver has consumed a piece (MSCCL's receiver), rather than the sender freeing it as the
// piece leaves (NCCL's FIFO).
class SlotInbox {
 public:
  SlotInbox(Comm& comm, int peer_rank, int tag, int window, std::int64_t expected, double delay,
            sg4::SemaphorePtr slots = nullptr)
      : comm_(comm), peer_(peer_rank), tag_(tag), expected_(expected), delay_(delay), slots_(std::move(slots)) {
    for (int i = 0; i < window; ++i) post();
  }
  Payload take() {
    double arrived = 0;
    Payload p = window_.front().wait(&arrived);
    window_.pop_front();
    post();
    comm_.pause_until(arrived + delay_);
    return p;
  }
  void release() { slots_->release(); }

 private:
  void post() {
    if (posted_ >= expected_) return;
    window_.push_back(comm_.irecv(peer_, tag_));
    ++posted_;
  }
  Comm& comm_;
  int peer_, tag_;
  std::int64_t expected_, posted_ = 0;
  double delay_;
  sg4::SemaphorePtr slots_;
  std::deque<RecvHandle> window_;
};

// A connection's sending end: a piece waits for a free slot, then a sender actor named `name` on
// `host` moves the pieces one after another, back to back on the wire, so the sending rank goes on
// receiving and reducing meanwhile.
class SlotOutbox {
 public:
  // `slots` slots of the sender's own, each freed as its piece has left (NCCL's FIFO); `rate`
  // (bytes/s, 0: none) caps each piece: what the channel itself can move over this connection.
  SlotOutbox(Comm& comm, sg4::Host* host, int peer_rank, int tag, int slots, const std::string& name,
             double rate = 0)
      : SlotOutbox(comm, host, peer_rank, tag, sg4::Semaphore::create(static_cast<unsigned>(slots)), true, name,
                   rate) {}
  // Slots shared with the receiving end, freed by its SlotInbox::release (MSCCL's connection).
  SlotOutbox(Comm& comm, sg4::Host* host, int peer_rank, int tag, sg4::SemaphorePtr shared_slots,
             const std::string& name)
      : SlotOutbox(comm, host, peer_rank, tag, std::move(shared_slots), false, name) {}

  void put(Payload p) {
    slots_->acquire();
    queue_.push_back(std::move(p));
    ready_->release();
  }
  // Waits until every piece has left.
  void flush() {
    ready_->release();  // with nothing queued behind the pieces: the sender stops after them
    sender_->join();
  }

 private:
  SlotOutbox(Comm& comm, sg4::Host* host, int peer_rank, int tag, sg4::SemaphorePtr slots, bool free_on_send,
             const std::string& name, double rate = 0)
      : comm_(comm), slots_(std::move(slots)), ready_(sg4::Semaphore::create(0)) {
    sender_ = sg4::Actor::create(name, host, [this, peer_rank, tag, free_on_send, rate] {
      for (;;) {
        ready_->acquire();
        if (queue_.empty()) break;  // closed
        Payload p = std::move(queue_.front());
        queue_.pop_front();
        comm_.send(peer_rank, std::move(p), tag, rate);
        if (free_on_send) slots_->release();
      }
    });
  }
  Comm& comm_;
  sg4::SemaphorePtr slots_, ready_;
  std::deque<Payload> queue_;
  sg4::ActorPtr sender_;
};

}  // namespace aggsim
