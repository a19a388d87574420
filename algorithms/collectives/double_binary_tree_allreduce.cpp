// Double binary tree all-reduce (NCCL's trees, Sanders et al.'s two-tree idea): two binary trees
// over the ranks, each reducing and then broadcasting half of the vector, pipelined as NCCL does in
// pieces of `chunk_bytes` (NCCL's chunk size, so a large half gets many pieces and a small one a
// single piece), or in an explicit number of `chunks` per half. Tree A is the in-order binary tree on
// positions 1..p (rank r at position r+1, leaves at odd positions); tree B is the same tree with the ranks
// shifted by one, so that no rank is an inner node of both trees. Each inner node thus receives from at most
// two children per pipeline period and every rank sends at most one piece per tree.
//
// Schedule (fixed, computed identically on every rank): in tree T, a node of height h sends piece c
// to its parent in period c + h (reduce); a node of depth d receives piece c from its parent in
// period c + d - 1 (broadcast). Each period has two rounds; every edge has a round colour chosen so
// that the two children of a node, and the two parent edges of a rank, differ (a 2-colouring of
// alternating constraint cycles, which always exists). In a round a rank posts at most one send
// and one receive, so its full-duplex link is never shared. Reduce phase: C + H - 1 periods, then
// the roots finalize their half, then broadcast: C + D - 1 periods (H: larger root height,
// D: larger tree depth; equal here). The cost is checked against the schedule's closed form in
// tests/algorithms/test_double_binary_tree_allreduce.cpp.
// Assumes a commutative, associative op.
//
// SMPI: no equivalent. NCCL mirrors tree B for odd p instead of shifting it; NCCL's chunk
// pipeline is asynchronous, ours advances in rounds.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>

#include "algorithms/collectives/allreduce.hpp"
#include "algorithms/registry.hpp"
#include "sim/core/units.hpp"

namespace aggsim {

namespace {

struct BinaryTree {
  std::vector<int> parent;                // by group index; -1 at the root
  std::vector<std::array<int, 2>> child;  // by group index; -1 when absent
  std::vector<int> height, depth;
  int root = 0;
};

// In-order binary tree on positions 1..n; `index_at(x)` is the group index at position x.
template <class IndexAt>
BinaryTree in_order_tree(int n, IndexAt index_at) {
  BinaryTree t;
  t.parent.assign(n, -1);
  t.child.assign(n, {-1, -1});
  t.height.assign(n, 0);
  t.depth.assign(n, 0);
  int root_pos = 1;
  while (root_pos * 2 <= n) root_pos *= 2;
  t.root = index_at(root_pos);
  for (int x = 1; x <= n; ++x) {
    const int b = x & -x, v = index_at(x);
    if (b < 2) continue;
    int right = 0;
    for (int d = b / 2; d >= 1 && right == 0; d /= 2)
      if (x + d <= n) right = x + d;
    const std::array<int, 2> kids = {index_at(x - b / 2), right ? index_at(right) : -1};
    for (int k = 0; k < 2; ++k) {
      t.child[v][k] = kids[k];
      if (kids[k] >= 0) t.parent[kids[k]] = v;
    }
  }
  // Depth top-down from the root, height bottom-up (children have larger depth).
  std::vector<int> order = {t.root};
  for (std::size_t i = 0; i < order.size(); ++i)
    for (int k : t.child[order[i]])
      if (k >= 0) {
        t.depth[k] = t.depth[order[i]] + 1;
        order.push_back(k);
      }
  for (auto it = order.rbegin(); it != order.rend(); ++it)
    if (t.parent[*it] >= 0) t.height[t.parent[*it]] = std::max(t.height[t.parent[*it]], t.height[*it] + 1);
  return t;
}

struct TwoTrees {
  std::array<BinaryTree, 2> tree;
  std::array<std::vector<int>, 2> colour;  // round of the edge (v -> parent) in each tree
};

TwoTrees two_trees(int n) {
  TwoTrees tt;
  tt.tree[0] = in_order_tree(n, [](int x) { return x - 1; });
  tt.tree[1] = in_order_tree(n, [n](int x) { return (x - 2 + n) % n; });
  // Constraint graph on edges (tree, v): sibling edges differ, the two parent edges of v differ.
  // Each edge has at most one constraint of each kind, so the graph is paths and even cycles.
  for (auto& c : tt.colour) c.assign(n, -1);
  auto sibling = [&](int t, int v) {
    const int p = tt.tree[t].parent[v];
    if (p < 0) return -1;
    const auto& k = tt.tree[t].child[p];
    return k[0] == v ? k[1] : k[0];
  };
  for (int t0 = 0; t0 < 2; ++t0)
    for (int v0 = 0; v0 < n; ++v0) {
      if (tt.tree[t0].parent[v0] < 0 || tt.colour[t0][v0] >= 0) continue;
      std::vector<std::array<int, 3>> stack = {{t0, v0, 0}};
      while (!stack.empty()) {
        const auto [t, v, c] = stack.back();
        stack.pop_back();
        if (tt.tree[t].parent[v] < 0) continue;
        if (tt.colour[t][v] >= 0) {
          if (tt.colour[t][v] != c) throw std::logic_error("double binary tree: edge colouring failed");
          continue;
        }
        tt.colour[t][v] = c;
        const int s = sibling(t, v);
        if (s >= 0) stack.push_back({t, s, 1 - c});
        stack.push_back({1 - t, v, 1 - c});
      }
    }
  return tt;
}

// Every member of a collective needs the same two trees. Built per rank they would cost O(n) memory
// and time on each of the n ranks (13 GB at 16,384 ranks); the ranks of one simulation share one
// copy while any of them holds it.
std::shared_ptr<const TwoTrees> shared_two_trees(int n) {
  static thread_local std::map<int, std::weak_ptr<const TwoTrees>> built;
  std::weak_ptr<const TwoTrees>& slot = built[n];
  if (auto trees = slot.lock()) return trees;
  auto trees = std::make_shared<const TwoTrees>(two_trees(n));
  slot = trees;
  return trees;
}

// One round of the schedule for this rank: at most one send and one receive, posted together.
struct RoundOps {
  int send_to = -1, send_tree = 0, send_piece = 0;
  int recv_from = -1, recv_tree = 0, recv_piece = 0;

  // The colouring guarantees one of each per round; a second would share the link (or lose data).
  void send(int to, int tree, int piece) {
    if (send_to >= 0) throw std::logic_error("double binary tree: two sends in one round");
    send_to = to, send_tree = tree, send_piece = piece;
  }
  void recv(int from, int tree, int piece) {
    if (recv_from >= 0) throw std::logic_error("double binary tree: two receives in one round");
    recv_from = from, recv_tree = tree, recv_piece = piece;
  }
};

// What a round does with the piece it receives: adds it in (reduce phase) or takes it (broadcast).
enum class OnReceive { combine, copy };

void run_round(Comm& comm, const Group& group, Gradient& g, const std::array<ChunkView, 2>& halves,
               int chunks, const RoundOps& r, OnReceive on_receive, const ReduceOp& op) {
  RecvHandle in;
  SendHandle out;
  if (r.recv_from >= 0) in = comm.irecv(group.rank_at(r.recv_from), 1 + r.recv_tree);
  if (r.send_to >= 0)
    out = comm.isend(group.rank_at(r.send_to),
                     dense_chunk_payload(g, sub_chunk(halves[r.send_tree], chunks, r.send_piece)),
                     1 + r.send_tree);
  if (r.recv_from >= 0) {
    const ChunkView piece = sub_chunk(halves[r.recv_tree], chunks, r.recv_piece);
    const Payload p = in.wait();
    if (on_receive == OnReceive::combine)
      combine_into(comm, g, piece, p, op);
    else
      unpack(g, {piece}, p);
  }
  out.wait();
}

}  // namespace

void double_binary_tree_allreduce(Comm& comm, const Group& group, Gradient& g, const ReduceOp& op, int world,
                                  int chunks) {
  const int n = group.size(), me = group.me;
  if (n == 1) {
    op.finalize(g.values, world);
    return;
  }
  const std::shared_ptr<const TwoTrees> shared = shared_two_trees(n);
  const TwoTrees& tt = *shared;
  const ChunkView all = whole_of(g);
  const std::array<ChunkView, 2> halves = {sub_chunk(all, 2, 0), sub_chunk(all, 2, 1)};
  auto in_range = [chunks](int c) { return c >= 0 && c < chunks; };

  // Reduce: the edge (v -> parent) carries piece k - height(v) in period k.
  const int reduce_periods =
      chunks + std::max(tt.tree[0].height[tt.tree[0].root], tt.tree[1].height[tt.tree[1].root]) - 1;
  for (int k = 0; k < reduce_periods; ++k)
    for (int round = 0; round < 2; ++round) {
      RoundOps r;
      for (int t = 0; t < 2; ++t) {
        const BinaryTree& tree = tt.tree[t];
        if (tree.parent[me] >= 0 && tt.colour[t][me] == round && in_range(k - tree.height[me]))
          r.send(tree.parent[me], t, k - tree.height[me]);
        for (int kid : tree.child[me])
          if (kid >= 0 && tt.colour[t][kid] == round && in_range(k - tree.height[kid]))
            r.recv(kid, t, k - tree.height[kid]);
      }
      run_round(comm, group, g, halves, chunks, r, OnReceive::combine, op);
    }
  for (int t = 0; t < 2; ++t)
    if (tt.tree[t].root == me)
      op.finalize(g.values.segment(halves[t].proxy.begin, halves[t].proxy.count), world);

  // Broadcast: the edge (parent -> v) carries piece k - depth(v) + 1 in period k.
  int max_depth = 0;
  for (const auto& tree : tt.tree)
    for (int d : tree.depth) max_depth = std::max(max_depth, d);
  for (int k = 0; k < chunks + max_depth - 1; ++k)
    for (int round = 0; round < 2; ++round) {
      RoundOps r;
      for (int t = 0; t < 2; ++t) {
        const BinaryTree& tree = tt.tree[t];
        if (tree.parent[me] >= 0 && tt.colour[t][me] == round && in_range(k - tree.depth[me] + 1))
          r.recv(tree.parent[me], t, k - tree.depth[me] + 1);
        for (int kid : tree.child[me])
          if (kid >= 0 && tt.colour[t][kid] == round && in_range(k - tree.depth[kid] + 1))
            r.send(kid, t, k - tree.depth[kid] + 1);
      }
      run_round(comm, group, g, halves, chunks, r, OnReceive::copy, op);
    }
}

int double_binary_tree_chunks(std::uint64_t wire_elements, std::uint64_t chunk_bytes) {
  const std::uint64_t half_bytes = (wire_elements + 1) / 2 * kFloatBytes;  // the larger half
  const std::uint64_t pieces = half_bytes / chunk_bytes + (half_bytes % chunk_bytes != 0);
  return static_cast<int>(std::clamp<std::uint64_t>(pieces, 1, kMaxDoubleBinaryTreeChunks));
}

namespace {

// Pieces of at most `chunk_bytes` each, counted on every call from the gradient's (bucket's) size.
GroupAllreduce with_chunk_bytes(std::uint64_t chunk_bytes) {
  return [chunk_bytes](Comm& comm, const Group& group, Gradient& g, const ReduceOp& op, int world) {
    double_binary_tree_allreduce(comm, group, g, op, world,
                                 double_binary_tree_chunks(g.wire_elements, chunk_bytes));
  };
}

}  // namespace

AlgorithmInfo double_binary_tree_allreduce_entry() {
  AlgorithmInfo info;
  info.name = "double_binary_tree_allreduce";
  info.messages_per_rank_step = [](int p) { return 2 * log2_rounds(p); };
  info.summary =
      "NCCL-style double binary tree: two complementary trees, each reducing + broadcasting half, pipelined";
  info.params = {
      ParamSpec("chunk_bytes", ParamKind::bytes, "",
                "pipeline piece size, as NCCL's chunk size: each half goes in pieces of at most this "
                "many bytes; " +
                    std::string(kDefaultChunkBytesText) + " when neither chunk_bytes nor chunks is given")
          .between(static_cast<double>(kFloatBytes), 1e18),
      ParamSpec(
          "chunks", ParamKind::integer, "",
          "explicit override: pieces each half is pipelined in, whatever its size (not with chunk_bytes)")
          .between(1, kMaxDoubleBinaryTreeChunks)};
  info.reduces_in_flight = true;
  info.consensus = true;
  info.prepare = [](const AlgorithmConfig& cfg) {
    if (cfg.params.has("chunks") && cfg.params.has("chunk_bytes"))
      throw ParamError("chunks",
                       "double_binary_tree_allreduce: give chunk_bytes (piece size) or chunks (piece "
                       "count), not both");
    const auto chunk_bytes_of = [](const Params& params) {
      return params.has("chunk_bytes") ? static_cast<std::uint64_t>(params.integer("chunk_bytes"))
                                       : kDefaultChunkBytes;
    };
    // Pieces are counted per call; the largest call must not need more than the pipeline takes
    // (capping them would time a different piece size than asked for).
    if (!cfg.params.has("chunks")) {
      const std::uint64_t chunk_bytes = chunk_bytes_of(cfg.params);
      const std::uint64_t half = ((cfg.model_bytes + 3) / 4 + 1) / 2 * kFloatBytes;
      const std::uint64_t pieces = half / chunk_bytes + (half % chunk_bytes != 0);
      if (pieces > kMaxDoubleBinaryTreeChunks)
        throw ParamError("model.size",
                         fmt::format("{}: each half of a call of that size is {} pieces of {} B (chunk_bytes), "
                                     "more than the {} aggsim pipelines: give a larger chunk_bytes",
                                     units::format_bytes(static_cast<double>(cfg.model_bytes)), pieces,
                                     chunk_bytes, kMaxDoubleBinaryTreeChunks));
    }
    return independent_ranks(cfg, [chunk_bytes_of](const AlgorithmConfig& c) {
      if (c.params.has("chunks"))
        return make_world_allreduce(
            c.op, with_chunks(double_binary_tree_allreduce, static_cast<int>(c.params.integer("chunks"))));
      return make_world_allreduce(c.op, with_chunk_bytes(chunk_bytes_of(c.params)));
    });
  };
  return info;
}

}  // namespace aggsim
