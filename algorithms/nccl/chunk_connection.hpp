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

// `rate` (bytes/s, 0: none) caps each piece: what the channel itself can move over this
// connection (NcclCommunicator::channel_rate).
class Outbox : public SlotOutbox {
 public:
  Outbox(Comm& comm, sg4::Host* host, int peer_rank, int tag, int slots, double rate = 0)
      : SlotOutbox(comm, host, peer_rank, tag, slots, fmt::format("nccl-send-{}-{}", peer_rank, tag), rate) {}
};

}  // namespace aggsim::nccl_chunk
