#pragma once
// A connection between two members at chunk level (movement: chunk), shared by every NCCL
// collective's piece-by-piece reference: the receiving end (Inbox) and the sending end (Outbox).
#include <fmt/format.h>

#include <deque>
#include <simgrid/s4u.hpp>

#include "sim/comm/comm.hpp"

namespace aggsim::nccl_chunk {

// One connection's receiving end at chunk level: at most `slots` pieces posted ahead (NCCL's FIFO
// slots), each usable a hop latency after it arrived.
class Inbox {
 public:
  Inbox(Comm& comm, int peer_rank, int tag, int slots, std::int64_t expected, double hop_latency)
      : comm_(comm), peer_(peer_rank), tag_(tag), expected_(expected), hop_latency_(hop_latency) {
    for (int i = 0; i < slots; ++i) post();
  }
  Payload take() {
    double arrived = 0;
    Payload p = window_.front().wait(&arrived);
    window_.pop_front();
    post();
    comm_.pause_until(arrived + hop_latency_);
    return p;
  }

 private:
  void post() {
    if (posted_ >= expected_) return;
    window_.push_back(comm_.irecv(peer_, tag_));
    ++posted_;
  }
  Comm& comm_;
  int peer_, tag_;
  std::int64_t expected_, posted_ = 0;
  double hop_latency_;
  std::deque<RecvHandle> window_;
};

// One connection's sending end: pieces leave one after another, at most `slots` of them waiting
// (NCCL's FIFO). At chunk level transfers carry no latency of their own (pieces_pay_latency), so a
// connection's pieces follow each other on the wire back to back, each arriving its route's
// latency later (charged by the Inbox). A sender actor on the member's host moves them, so the
// member goes on receiving and reducing meanwhile. `rate` (bytes/s, 0: none) caps each piece: what
// the channel itself can move over this connection (NcclCommunicator::channel_rate).
class Outbox {
 public:
  Outbox(Comm& comm, sg4::Host* host, int peer_rank, int tag, int slots, double rate = 0)
      : comm_(comm),
        free_(sg4::Semaphore::create(static_cast<unsigned>(slots))),
        ready_(sg4::Semaphore::create(0)) {
    sender_ = sg4::Actor::create(fmt::format("nccl-send-{}-{}", peer_rank, tag), host,
                                 [this, peer_rank, tag, rate] {
                                   for (;;) {
                                     ready_->acquire();
                                     if (queue_.empty()) break;  // closed
                                     Payload p = std::move(queue_.front());
                                     queue_.pop_front();
                                     comm_.send(peer_rank, std::move(p), tag, rate);
                                     free_->release();
                                   }
                                 });
  }
  void put(Payload p) {
    free_->acquire();
    queue_.push_back(std::move(p));
    ready_->release();
  }
  // Waits until every piece has left.
  void flush() {
    ready_->release();  // with nothing queued behind the pieces: the sender stops after them
    sender_->join();
  }

 private:
  Comm& comm_;
  sg4::SemaphorePtr free_, ready_;
  std::deque<Payload> queue_;
  sg4::ActorPtr sender_;
};

}  // namespace aggsim::nccl_chunk
