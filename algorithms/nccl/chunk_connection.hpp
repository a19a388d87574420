#pragma once
// A connection between two members at chunk level (movement: chunk), shared by every NCCL
// collective's piece-by-piece reference: the receiving end (Inbox: at most NCCL's FIFO slots of
// pieces posted ahead, each usable a hop latency after it arrived) and the sending end (Outbox:
// pieces leave one after another, at most `slots` of them waiting), on the transport's slotted
// connection.
#include <fmt/format.h>

#include "algorithms/transport/slot_connection.hpp"

namespace aggsim::nccl_chunk {

using Inbox = SlotInbox;

class Outbox : public SlotOutbox {
 public:
  Outbox(Comm& comm, sg4::Host* host, int peer_rank, int tag, int slots)
      : SlotOutbox(comm, host, peer_rank, tag, slots, fmt::format("nccl-send-{}-{}", peer_rank, tag)) {}
};

}  // namespace aggsim::nccl_chunk
