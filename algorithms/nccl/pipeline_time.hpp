#pragma once
// How long NCCL's pipelines take when nothing but their own pieces and latencies hold them up: the
// timing of the chunk-level movement (every piece a message, NCCL's slots per connection, a hop
// latency per piece), computed in-process from per-hop costs instead of simulated message by
// message. The flow level (nccl_communicator.cpp) takes the later of this and its streams, which
// share the links with all other traffic.
//
// What holds a piece up, as at chunk level:
//  - its data: a member forwards a slice once it has received (and reduced) it;
//  - its connection: slices leave one after another, and a connection holds at most `slots`
//    slices (NCCL_STEPS / SLICESTEPS): the sender may queue a slice once the one `slots` before
//    has left, and a slice leaves once the receiver has a slot for it, which it frees when it takes
//    the slice `slots` before. A receiver takes slices in order, each usable a hop latency after it
//    arrived; so on a hop of high latency a connection moves at most slots + 1 slices per latency
//    (the window), whatever the link's bandwidth;
//  - the member: one actor per channel takes and forwards in program order.
#include <vector>

namespace aggsim {

// One hop of a ring, from a member to the next.
struct PipelineHop {
  double latency = 0;     // s from a slice's arrival to its use: the route's latency and the protocol's hop
  double slice_time = 0;  // s a slice takes on the hop, among the slices that move with it
  // s between two slices leaving on the hop at the least: its links' time for everything the call
  // sends through them per slice (trees: a member's links carry its children's pieces up and its
  // parent's down at once, once the pipeline is full); 0: none
  double period = 0;
};

// A ring collective's shape: each loop a member sends its own slices, then takes and forwards
// `steps` x `slices` slices (the last step's kept), `loops` times.
struct RingPipeline {
  int steps = 1;   // steps a slice travels per loop: 2(p - 1) for all-reduce, p - 1 for all-gather
  int slices = 1;  // slices per step (Simple's ring: 2)
  int loops = 1;
  int slots = 8;  // slices in flight per connection
};

// The time from the call's start until every member has taken its last slice and sent its last,
// for a ring of hops[q] (member q to q + 1). Costs O(ring length x slices per connection), or
// O(period x ...) when the hops repeat with a period (identical nodes).
double ring_pipeline_time(const std::vector<PipelineHop>& hops, const RingPipeline& shape);

// One member of a tree: its parent (-1 at the root), its children in the order it takes from them,
// and the hops to and from its parent.
struct TreeMember {
  int parent = -1;
  std::vector<int> children;
  PipelineHop up;    // to the parent
  PipelineHop down;  // from the parent
};

// NCCL's tree all-reduce on one channel: `pieces` pieces, each reduced up the tree (a member takes
// from its children in order, then sends to its parent) and broadcast down (a member takes from
// its parent, then sends to each child); a member's up and down are two actors, each sending
// through one connection per peer with `slots` pieces in flight.
struct TreePipeline {
  int pieces = 1;
  int slots = 8;
};

// When a connection's pieces moved: its first left, its last arrived; and the least time from its
// last piece leaving to the call's end: that piece's own way on to the last member it reaches, with
// nothing ahead of it (a link that holds the pipeline back leaves only this after its last piece).
struct ConnectionTimes {
  double first_leaves = 0;
  double last_arrives = 0;
  double rest = 0;
};
// Per member: its connections to its parent, up and down (the root's are unused).
struct TreeTimes {
  std::vector<ConnectionTimes> up, down;
};

// The time from the call's start until the last member has its last piece. O(members x pieces).
// `times` (optional) receives when each connection moved its pieces.
double tree_pipeline_time(const std::vector<TreeMember>& members, const TreePipeline& shape,
                          TreeTimes* times = nullptr);

// One connection's use of a link: the earliest its first piece can reach the link (release), the
// link's time for all its pieces (work) and the least time from its last piece leaving to the
// call's end (tail).
struct LinkJob {
  double release = 0, work = 0, tail = 0;
};

// The least time by which a link carrying `jobs` one after another can let the call end: over the
// jobs released from some time on (or ending with at least some tail), that time, all their work
// and their least tail. A link that idles between the pieces going up and those coming back down
// from the root is bound by the later ones alone. O(jobs log jobs); sorts `jobs`.
double link_bound(std::vector<LinkJob>& jobs);

}  // namespace aggsim
