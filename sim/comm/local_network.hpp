#pragma once
// In-process delivery for replayed steps (sim/engine/replay.hpp): a send is queued at once and wakes
// its receiver; a receive blocks its actor until its message is there. Messages from one rank to
// another on one channel keep their order, and a receive takes the message of its own post number,
// as SimGrid's mailboxes match them. No simulated time passes and no transfer is modelled.
#include <cstdint>
#include <optional>
#include <simgrid/s4u.hpp>
#include <vector>

#include "sim/comm/payload.hpp"

namespace aggsim {

class LocalNetwork {
 public:
  using Key = std::uint64_t;
  explicit LocalNetwork(int ranks);
  static Key key(int src, int dst, int channel);

  // The post number of a new receive on `key` (0, 1, ... in posting order).
  std::uint64_t post_receive(Key key) { return channel(key).receives_posted++; }
  void send(Key key, int dst, Payload&& payload);
  bool arrived(Key key, std::uint64_t seq) const;
  // Blocks rank `me`'s actor until message `seq` of `key` has been sent, and hands it over.
  Payload receive(Key key, std::uint64_t seq, int me);

 private:
  struct Channel {
    Key key = 0;
    std::uint64_t receives_posted = 0;
    std::uint64_t first = 0;  // post number of queue[head]
    std::size_t head = 0;     // queue[0, head) are taken; the vector is cut when they pile up
    std::vector<std::optional<Payload>> queue;  // sent, in order; taken ones empty until popped
  };
  struct Waiter {
    simgrid::s4u::SemaphorePtr wake;
    Key key = 0;
    bool waiting = false;
  };
  static int destination(Key key) { return static_cast<int>(key & ((Key{1} << 21) - 1)); }
  Channel& channel(Key key);
  const Channel* find(Key key) const;

  // Per destination rank, its incoming channels sorted by key: most ranks hear from a handful of
  // peers, so a search in place beats a hash map over every rank's channels at thousands of ranks,
  // and a parameter server's thousands of senders still cost a binary search.
  std::vector<std::vector<Channel>> inbox_;
  std::vector<Waiter> waiters_;  // per rank
};

}  // namespace aggsim
