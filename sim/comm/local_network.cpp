#include "sim/comm/local_network.hpp"

#include <algorithm>

namespace aggsim {

LocalNetwork::LocalNetwork(int ranks)
    : inbox_(static_cast<std::size_t>(ranks)), waiters_(static_cast<std::size_t>(ranks)) {
  for (auto& w : waiters_) w.wake = simgrid::s4u::Semaphore::create(0);
}

LocalNetwork::Key LocalNetwork::key(int src, int dst, int channel) {
  return (static_cast<Key>(channel) << 42) | (static_cast<Key>(src) << 21) | static_cast<Key>(dst);
}

namespace {
template <class Channels>
auto lower_bound_key(Channels& in, LocalNetwork::Key key) {
  return std::lower_bound(in.begin(), in.end(), key,
                          [](const auto& c, LocalNetwork::Key k) { return c.key < k; });
}
}  // namespace

LocalNetwork::Channel& LocalNetwork::channel(Key key) {
  std::vector<Channel>& in = inbox_.at(static_cast<std::size_t>(destination(key)));
  auto it = lower_bound_key(in, key);
  if (it == in.end() || it->key != key) {
    it = in.emplace(it);
    it->key = key;
  }
  return *it;
}

const LocalNetwork::Channel* LocalNetwork::find(Key key) const {
  const std::vector<Channel>& in = inbox_.at(static_cast<std::size_t>(destination(key)));
  const auto it = lower_bound_key(in, key);
  return it == in.end() || it->key != key ? nullptr : &*it;
}

void LocalNetwork::send(Key key, int dst, Payload&& payload) {
  channel(key).queue.emplace_back(std::move(payload));
  Waiter& w = waiters_.at(static_cast<std::size_t>(dst));
  if (w.waiting && w.key == key) {
    w.waiting = false;
    w.wake->release();
  }
}

bool LocalNetwork::arrived(Key key, std::uint64_t seq) const {
  const Channel* c = find(key);
  if (!c || seq < c->first) return false;
  const std::size_t at = c->head + (seq - c->first);
  return at < c->queue.size() && c->queue[at].has_value();
}

Payload LocalNetwork::receive(Key key, std::uint64_t seq, int me) {
  // Every actor runs on SimGrid's one thread: nothing happens between the check and the wait.
  while (!arrived(key, seq)) {
    Waiter& w = waiters_.at(static_cast<std::size_t>(me));
    w.key = key;
    w.waiting = true;
    w.wake->acquire();
  }
  Channel& c = channel(key);
  std::optional<Payload>& slot = c.queue[c.head + (seq - c.first)];
  Payload out = std::move(*slot);
  slot.reset();
  while (c.head < c.queue.size() && !c.queue[c.head].has_value()) {
    ++c.head;
    ++c.first;
  }
  if (c.head == c.queue.size()) {
    c.queue.clear();
    c.head = 0;
  } else if (c.head > 64 && 2 * c.head > c.queue.size()) {
    c.queue.erase(c.queue.begin(), c.queue.begin() + static_cast<std::ptrdiff_t>(c.head));
    c.head = 0;
  }
  return out;
}

}  // namespace aggsim
