// The tree pipeline's drain and the link bound of the flow level's tree timing
// (algorithms/nccl/pipeline_time.hpp), against hand-computed closed forms.
#include <catch2/catch.hpp>

#include "algorithms/nccl/pipeline_time.hpp"

using namespace aggsim;

TEST_CASE("a tree connection's rest is its last piece's own way to the last member", "[nccl]") {
  // A chain 2 -> 1 -> 0 (root) with a second child 3 of the root; every hop its own costs.
  std::vector<TreeMember> m(4);
  m[0].children = {1, 3};
  m[1] = {0, {2}, {1.0, 10.0}, {2.0, 20.0}};
  m[2] = {1, {}, {3.0, 30.0}, {4.0, 40.0}};
  m[3] = {0, {}, {5.0, 50.0}, {6.0, 50.0}};
  TreeTimes times;
  const double one_piece = tree_pipeline_time(m, TreePipeline{1, 8}, &times);
  // Down from the root the deepest way is 0 -> 1 -> 2: (20 + 2) + (40 + 4); to 3 only 56.
  const double below_root = 66.0;
  CHECK(times.up[2].rest == Approx(3.0 + (1.0 + 10.0) + below_root));
  CHECK(times.up[1].rest == Approx(1.0 + below_root));
  CHECK(times.up[3].rest == Approx(5.0 + below_root));
  CHECK(times.down[2].rest == Approx(4.0));
  CHECK(times.down[1].rest == Approx(2.0 + 44.0));
  // One piece waits for nothing but its data, and the root for its last child's (3 sends at 0 and
  // is in at 55; 1 has 2's piece in at 44): the call ends exactly 3's rest after 3's piece left,
  // and no later than any connection's rest after its piece left.
  CHECK(one_piece == Approx(times.up[3].last_arrives + times.up[3].rest));
  CHECK(one_piece == Approx(121.0));
  for (int x : {1, 2, 3}) {
    CHECK(times.up[x].last_arrives + times.up[x].rest <= one_piece + 1e-9);
    CHECK(times.down[x].last_arrives + times.down[x].rest <= one_piece + 1e-9);
  }
}

TEST_CASE("a link idle between the pieces going up and those coming down is bound by the later ones",
          "[nccl]") {
  // Up: released at 0, 1 s of work, 5 s on to the end; down: released at 10 (after the round trip
  // through the root), 2 s of work, 1 s on. All back to back from the first: 0 + 3 + 1 = 4; the
  // down pieces alone: 10 + 2 + 1 = 13; the up ones alone: 0 + 1 + 5 = 6.
  std::vector<LinkJob> jobs{{0, 1, 5}, {10, 2, 1}};
  CHECK(link_bound(jobs) == Approx(13.0));
  // Both released at once: everything back to back and the least tail, or the longest tail alone.
  std::vector<LinkJob> together{{0, 3, 1}, {0, 1, 2}};
  CHECK(link_bound(together) == Approx(5.0));
  std::vector<LinkJob> long_tail{{0, 1, 1}, {0, 1, 7}};
  CHECK(link_bound(long_tail) == Approx(8.0));
}
