// Moving segments of a gradient in and out of payloads: proxy values and wire bytes together.
#include <stdexcept>

#include "algorithms/collectives/blocks.hpp"

namespace aggsim {

Payload pack(const Gradient& g, const std::vector<ChunkView>& segs) {
  Payload p;
  std::int64_t total = 0;
  for (const auto& s : segs) total += s.proxy.count;
  p.values.resize(total);
  std::int64_t at = 0;
  for (const auto& s : segs) {
    p.values.segment(at, s.proxy.count) = g.values.segment(s.proxy.begin, s.proxy.count);
    at += s.proxy.count;
    p.wire_bytes += static_cast<std::uint64_t>(s.wire.count) * kFloatBytes;
  }
  return p;
}

void unpack(Gradient& g, const std::vector<ChunkView>& segs, const Payload& p) {
  std::int64_t at = 0;
  for (const auto& s : segs) {
    if (at + s.proxy.count > p.values.size())
      throw std::logic_error("unpack: payload shorter than its segments");
    g.values.segment(s.proxy.begin, s.proxy.count) = p.values.segment(at, s.proxy.count);
    at += s.proxy.count;
  }
}

void combine_into(Comm& comm, Gradient& g, const ChunkView& seg, const Payload& p, const ReduceOp& op) {
  charge_reduce(comm, static_cast<std::uint64_t>(seg.wire.count) * kFloatBytes);
  op.combine(g.values.segment(seg.proxy.begin, seg.proxy.count), p.values);
}

void exchange_combine(Comm& comm, int peer, Gradient& g, const ChunkView& send, const ChunkView& recv,
                      const ReduceOp& op) {
  const Payload in = comm.sendrecv(peer, dense_chunk_payload(g, send), peer);
  combine_into(comm, g, recv, in, op);
}

int largest_power_of_two_at_most(int n) {
  int p = 1;
  while (p * 2 <= n) p *= 2;
  return p;
}

}  // namespace aggsim
