#pragma once
// A set of ranks taking part in a collective (the whole world, the ranks of one node, one rank per
// node, ...). Building blocks take a Group so hierarchical schemes can reuse them on sub-groups.
#include <algorithm>
#include <stdexcept>
#include <vector>

#include "sim/api/aggregator.hpp"
#include "sim/api/partition.hpp"

namespace aggsim {

// Every rank holds its own Group while a collective runs, so a group of the whole world must not
// cost a vector of p ranks per rank (p^2 in all: 1 GiB at 16,384 ranks). Ranks are kept as runs of
// equal stride: the world, a node, one rank per node, a fold's core are one or two runs.
class Group {
 public:
  Group() = default;
  explicit Group(const std::vector<int>& ranks, int me_index = 0) : me(me_index) {
    for (int r : ranks) add(r);
  }
  // Ranks first, first + stride, ... (count of them).
  static Group strided(int first, int stride, int count, int me_index) {
    Group g;
    g.me = me_index;
    if (count > 0) g.runs_.push_back({0, first, count > 1 ? stride : 1, count});
    g.size_ = count;
    return g;
  }
  static Group world(const RankContext& ctx) { return strided(0, 1, ctx.world, ctx.rank); }

  int me = 0;  // my index in the group

  int size() const { return size_; }
  bool empty() const { return size_ == 0; }
  int rank_at(int index) const {
    if (index < 0 || index >= size_) throw std::out_of_range("Group::rank_at: index outside the group");
    const Run& run = run_of(index);
    return run.first_rank + run.stride * (index - run.first_index);
  }
  // Position of `rank` in the group; -1 when it is not a member.
  int index_of(int rank) const {
    for (const Run& run : runs_) {
      const int offset = rank - run.first_rank;
      if (offset % run.stride != 0) continue;
      const int k = offset / run.stride;
      if (k >= 0 && k < run.count) return run.first_index + k;
    }
    return -1;
  }
  // Appends `rank` (extending the last run when it keeps that run's stride).
  void add(int rank) {
    if (!runs_.empty()) {
      Run& last = runs_.back();
      if (last.count == 1 && rank != last.first_rank) {
        last.stride = rank - last.first_rank;
        ++last.count;
        ++size_;
        return;
      }
      if (last.first_rank + last.stride * last.count == rank) {
        ++last.count;
        ++size_;
        return;
      }
    }
    runs_.push_back({size_, rank, 1, 1});
    ++size_;
  }

 private:
  struct Run {
    int first_index;  // position of the run's first rank in the group
    int first_rank;
    int stride;  // never 0
    int count;
  };
  const Run& run_of(int index) const {
    if (runs_.size() == 1) return runs_.front();
    auto it = std::upper_bound(runs_.begin(), runs_.end(), index,
                               [](int i, const Run& r) { return i < r.first_index; });
    return *(it - 1);
  }
  std::vector<Run> runs_;
  int size_ = 0;
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

// A payload carrying chunk `c` of `g` as dense elements of `element_bytes` each (fp32 unless a
// mixed-precision scheme sends 16-bit ones).
inline Payload dense_chunk_payload(const Gradient& g, const ChunkView& c, std::uint64_t element_bytes = kFloatBytes) {
  Payload p;
  p.values = g.values.segment(c.proxy.begin, c.proxy.count);
  p.wire_bytes = static_cast<std::uint64_t>(c.wire.count) * element_bytes;
  return p;
}

}  // namespace aggsim
