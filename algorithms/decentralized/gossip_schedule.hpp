#pragma once
// GossipGraD's partner schedules (Daily et al., "GossipGraD", arXiv:1803.05880, as in torchdistx's
// gossip_grad) over a virtual topology of n nodes: at step t the power is 2^k, k = t mod period,
// period = ceil(log2 n), so within one period a node's model reaches all others indirectly.
//   DISSEMINATION: send to (i + 2^k) mod n, receive from (i - 2^k) mod n (partners vary)
//   CUBE:          exchange with i xor 2^k (symmetric); no exchange when that is >= n, as in
//                  torchdistx (which, like gossipgrad, refuses an odd n)
// After each period the virtual topology is reshuffled (rotation of partners).
#include <cstdint>
#include <vector>

#include "sim/core/random.hpp"

namespace aggsim {

enum class GossipSchedule { dissemination, cube };

inline int gossip_period(int n) {
  int k = 0;
  while ((std::int64_t{1} << k) < n) ++k;
  return k < 1 ? 1 : k;
}

// Positions in the virtual topology; -1 when the node sits this step out.
struct GossipPeers {
  int send = -1;
  int recv = -1;
};

inline GossipPeers gossip_peers(GossipSchedule schedule, int position, int n, std::int64_t step) {
  if (n < 2) return {};
  const int hop = 1 << static_cast<int>(step % gossip_period(n));
  if (schedule == GossipSchedule::dissemination)
    return {(position + hop) % n, ((position - hop) % n + n) % n};
  const int partner = position ^ hop;
  if (partner >= n) return {};
  return {partner, partner};
}

// Virtual topology of period `period_index`: order[position] = node. Identity without shuffling;
// otherwise a Fisher-Yates permutation from the scenario seed, the same on every rank.
inline std::vector<int> virtual_topology(int n, bool shuffle, std::uint64_t seed, std::int64_t period_index) {
  std::vector<int> order(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) order[static_cast<std::size_t>(i)] = i;
  if (!shuffle) return order;
  Rng rng = make_rng(seed, Stream::topology, 0x676f73736970ULL,
                     static_cast<std::uint64_t>(period_index));  // "gossip"
  for (int i = n - 1; i > 0; --i)
    std::swap(order[static_cast<std::size_t>(i)],
              order[static_cast<std::size_t>(uniform_below(rng, static_cast<std::uint64_t>(i) + 1))]);
  return order;
}

}  // namespace aggsim
