#include "sim/comm/local_network.hpp"

#include <stdexcept>

namespace aggsim {

LocalNetwork::LocalNetwork(int ranks) : waiters_(static_cast<std::size_t>(ranks)) {
  for (auto& w : waiters_) w.wake = simgrid::s4u::Semaphore::create(0);
}

LocalNetwork::Key LocalNetwork::key(int src, int dst, int channel) {
  return (static_cast<Key>(channel) << 42) | (static_cast<Key>(src) << 21) | static_cast<Key>(dst);
}

void LocalNetwork::send(Key key, int dst, Payload&& payload) {
  channels_[key].queue.emplace_back(std::move(payload));
  Waiter& w = waiters_.at(static_cast<std::size_t>(dst));
  if (w.waiting && w.key == key) {
    w.waiting = false;
    w.wake->release();
  }
}

bool LocalNetwork::arrived(Key key, std::uint64_t seq) const {
  const auto it = channels_.find(key);
  if (it == channels_.end()) return false;
  const Channel& c = it->second;
  return seq >= c.first && seq - c.first < c.queue.size() && c.queue[seq - c.first].has_value();
}

Payload LocalNetwork::receive(Key key, std::uint64_t seq, int me) {
  // Every actor runs on SimGrid's one thread: nothing happens between the check and the wait.
  while (!arrived(key, seq)) {
    Waiter& w = waiters_.at(static_cast<std::size_t>(me));
    w.key = key;
    w.waiting = true;
    w.wake->acquire();
  }
  Channel& c = channels_[key];
  std::optional<Payload>& slot = c.queue[seq - c.first];
  Payload out = std::move(*slot);
  slot.reset();
  while (!c.queue.empty() && !c.queue.front().has_value()) {
    c.queue.pop_front();
    ++c.first;
  }
  return out;
}

}  // namespace aggsim
