#pragma once
// A set of ranks taking part in a collective (the whole world, the ranks of one node, one rank per
// node, ...). Building blocks take a Group so hierarchical schemes can reuse them on sub-groups.
#include <numeric>
#include <stdexcept>
#include <vector>

#include "sim/api/aggregator.hpp"
#include "sim/api/partition.hpp"

namespace aggsim {

struct Group {
  std::vector<int> ranks;  // global ranks, in group order
  int me = 0;              // my index in `ranks`

  int size() const { return static_cast<int>(ranks.size()); }
  int rank_at(int index) const { return ranks[static_cast<std::size_t>(index)]; }

  static Group world(const RankContext& ctx) {
    Group g;
    g.ranks.resize(static_cast<std::size_t>(ctx.world));
    std::iota(g.ranks.begin(), g.ranks.end(), 0);
    g.me = ctx.rank;
    return g;
  }
};

// Chunk `c` of `parts` on both planes of a gradient.
struct ChunkView {
  Range proxy;
  Range wire;
};

inline ChunkView chunk_of(const Gradient& g, int parts, int c) {
  return {chunk_range(g.values.size(), parts, c),
          chunk_range(static_cast<std::int64_t>(g.wire_elements), parts, c)};
}

// A payload carrying chunk `c` of `g` as dense fp32.
inline Payload dense_chunk_payload(const Gradient& g, const ChunkView& c) {
  Payload p;
  p.values = g.values.segment(c.proxy.begin, c.proxy.count);
  p.wire_bytes = static_cast<std::uint64_t>(c.wire.count) * kFloatBytes;
  return p;
}

}  // namespace aggsim
