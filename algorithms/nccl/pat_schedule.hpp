#pragma once
// NCCL's PAT (Parallel Aggregated Trees) reduce-scatter and all-gather, as NCCL 2.23.4 runs them
// (src/include/collectives.h PatRSAlgorithm and PatAGAlgorithm, src/device/reduce_scatter.h and
// all_gather.h, src/transport/generic.cc, src/enqueue.cc): one GPU per node, the Simple protocol.
//
// Reduce-scatter: for each destination t a binomial tree over the offsets u = (t - r) mod n of the
// ranks r. The rank at offset u adds its children's partial results (offsets u + 2^k, 2^k below
// u's lowest set bit) to its own input and sends the sum to its parent, the rank at offset
// u - lowbit(u) (rank r + lowbit(u), at distance 2^d: "dimension" d); offset 0 is t, which ends
// with its shard of the reduction. Every rank walks one list of steps (pat_reduce_scatter_steps),
// grouped so that `agg` steps of one distance are in flight at once (NCCL's aggFactor); the list's
// order decides when each piece moves and in which order a node adds its children. All-gather runs
// the same trees from each root down: the list backwards, sends and receives swapped.
#include <Eigen/Core>
#include <cstdint>
#include <functional>
#include <vector>

#include "algorithms/nccl/nccl_op.hpp"
#include "algorithms/nccl/nccl_tuning.hpp"
#include "sim/api/partition.hpp"
#include "sim/api/reduce_op.hpp"

namespace aggsim {

// Whether PAT's reduce-scatter runs this op: NCCL 2.23.4 leaves it out for the ops it pre-multiplies or
// divides after (src/enqueue.cc: ncclDevPreMulSum, ncclDevSumPostDiv), which avg and custom_avg are.
bool pat_reduces(const ReduceOp& op);
// The system NCCL's choice sees for a call: PAT off for a reduce-scatter of such an op.
NcclSystem pat_for_op(NcclSystem system, NcclCollective collective, bool op_reduces);
// Whether NCCL 2.23.4 enables PAT on a communicator (ncclPatEnable): one GPU per node.
inline bool pat_placement_runs(int ranks, int nodes) {
  return ranks == nodes;
}

// One step of a rank's walk, in offsets relative to the rank (the same list on every rank).
struct PatStep {
  int node = 0;       // the offset whose piece this step works on
  int child = -1;     // reduce-scatter: the child offset whose partial arrives (-1: none)
  int recv_dim = -1;  // the dimension a piece arrives from (-1: none)
  int send_dim = -1;  // the dimension a piece leaves on after the step (-1: none)
};

// NCCL's aggregation factor (PatRSAlgorithm's constructor): doubled while a channel's piece of a
// rank's shard (`part_bytes`) fits twice more into a chunk, then while NCCL's 8 FIFO steps allow,
// below ranks / 2.
int pat_aggregation(int ranks, double chunk_bytes, double part_bytes);
// One loop's steps of a reduce-scatter on `ranks` ranks with aggregation `agg`: the leaves' sends
// of each group of distances first, each node's children from the larger distances below
// n / agg downwards, then upwards from n / agg, distance 1 last (the order NCCL 2.23.4's
// PatRSAlgorithm::getNextOp walks).
std::vector<PatStep> pat_reduce_scatter_steps(int ranks, int agg);
// The all-gather's: the reduce-scatter's backwards, what arrived now leaving and what left arriving.
std::vector<PatStep> pat_all_gather_steps(int ranks, int agg);
std::vector<PatStep> pat_steps(NcclCollective collective, int ranks, int agg);
// The rank a piece of `rank` on dimension `dim` goes to (sending) or comes from: a reduce-scatter
// sends to rank + 2^dim and receives from rank - 2^dim, an all-gather the other way.
int pat_peer(NcclCollective collective, int rank, int dim, bool sending, int ranks);

// NCCL's PAT chunk (calcCollChunking): Simple's 512 KiB step, halved down to 64 KiB while 16
// (reduce-scatter) or 32 (all-gather) chunks would exceed a channel's share of the call.
double pat_chunk_bytes(NcclCollective collective, double channel_bytes);

// Piece (channel, loop) of rank `owner`'s shard of n elements on `ranks` ranks: each channel a
// contiguous part of every shard, each loop a part of that (NCCL's per-channel parts, chunk by chunk).
Range pat_piece(std::int64_t n, int ranks, int owner, int channels, int loops, int channel, int loop);

// Every shard of the reduction at its place (rank t keeps nccl_shard(n, ranks, t)), each node adding
// its input first and then its children's partials in the steps' order.
Eigen::VectorXf nccl_pat_reduce_scatter(int agg, const std::vector<const Eigen::VectorXf*>& inputs,
                                        const ReduceOp& op, int world, WireDtype dtype = WireDtype::fp32);

// How a piece crosses from a rank on one dimension: seconds per byte it takes to leave (alone on its
// way), the seconds from its last byte leaving until the receiver can use it, and the first and last
// links of its way with the rate each gives the channel (which the member's other pieces leaving, or
// the receiver's arriving, on that link share).
struct PatHop {
  double seconds_per_byte = 0;
  double delay = 0;
  const void* out_link = nullptr;
  const void* in_link = nullptr;
  double out_rate = 0, in_rate = 0;  // B/s
};
// The pipeline's own time of one channel as the chunk level moves it: every rank walks the steps
// `loops` times; a step waits for its piece to arrive; a piece leaves after the rank's earlier
// pieces (one at a time), with at most `slots` waiting on a connection. `hop(rank, dim)` and
// `piece_bytes(rank, node, loop)` give the costs.
double pat_pipeline_time(NcclCollective collective, const std::vector<PatStep>& steps, int ranks, int loops,
                         int slots, const std::function<PatHop(int, int)>& hop,
                         const std::function<double(int, int, int)>& piece_bytes);

}  // namespace aggsim
