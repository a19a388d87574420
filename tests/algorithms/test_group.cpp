// Group keeps its ranks as runs of equal stride; it must answer exactly as the plain list would.
#include <catch2/catch.hpp>
#include <random>
#include <vector>

#include "algorithms/collectives/group.hpp"

using namespace aggsim;

namespace {

void check_against_list(const Group& g, const std::vector<int>& list) {
  REQUIRE(g.size() == static_cast<int>(list.size()));
  for (int i = 0; i < g.size(); ++i) {
    INFO("index " << i);
    REQUIRE(g.rank_at(i) == list[static_cast<std::size_t>(i)]);
    // The first position of that rank in the list.
    int first = 0;
    while (list[static_cast<std::size_t>(first)] != list[static_cast<std::size_t>(i)]) ++first;
    REQUIRE(g.index_of(list[static_cast<std::size_t>(i)]) == first);
  }
  CHECK_THROWS_AS(g.rank_at(-1), std::out_of_range);
  CHECK_THROWS_AS(g.rank_at(g.size()), std::out_of_range);
}

}  // namespace

TEST_CASE("Group: runs of equal stride give the ranks of the plain list", "[group]") {
  SECTION("the world, a row and a column of a torus") {
    std::vector<int> world(1000);
    for (int i = 0; i < 1000; ++i) world[static_cast<std::size_t>(i)] = i;
    check_against_list(Group::strided(0, 1, 1000, 7), world);
    check_against_list(Group(world), world);
    std::vector<int> column;
    for (int r = 0; r < 25; ++r) column.push_back(r * 40 + 3);
    check_against_list(Group::strided(3, 40, 25, 0), column);
    check_against_list(Group(column), column);
  }
  SECTION("a fold's core: odd ranks below 2 x extra, then every rank") {
    std::vector<int> core;
    const int n = 1000, extra = n - 512;
    for (int k = 0; k < 512; ++k) core.push_back(k < extra ? 2 * k + 1 : k + extra);
    check_against_list(Group(core), core);
  }
  SECTION("random lists: repeats, strides that change, descending runs") {
    std::mt19937 rng(12345);
    for (int trial = 0; trial < 200; ++trial) {
      std::vector<int> list;
      const int length = 1 + static_cast<int>(rng() % 60);
      for (int i = 0; i < length; ++i) {
        const int pick = static_cast<int>(rng() % 4);
        if (pick == 0 && !list.empty())
          list.push_back(list.back() + 3);  // keeps a run going
        else if (pick == 1 && !list.empty())
          list.push_back(list.back());  // a repeat
        else
          list.push_back(static_cast<int>(rng() % 100) - 50);
      }
      INFO("trial " << trial);
      Group g(list, 0);
      check_against_list(g, list);
    }
  }
  SECTION("members and strangers") {
    const Group g = Group::strided(10, -2, 5, 0);  // 10, 8, 6, 4, 2
    CHECK(g.index_of(6) == 2);
    CHECK(g.index_of(7) == -1);
    CHECK(g.index_of(0) == -1);
    CHECK(g.index_of(12) == -1);
    CHECK(Group().empty());
    CHECK(Group().index_of(0) == -1);
  }
}
