#include "algorithms/nccl/mesh_rings.hpp"

#include <cstdint>
#include <algorithm>
#include <map>
#include <mutex>
#include <tuple>
#include <random>

namespace aggsim {

namespace {

// Depth-first search for one Hamiltonian cycle from GPU 0 over the links not yet used, trying the
// next GPUs in a seeded random order; gives up after `budget` steps (the search is exponential in
// the worst case, and a set of fewer rings is still a valid answer); `total` bounds all searches of
// one node size together, so a large node costs at most a fraction of a second.
class CycleSearch {
 public:
  CycleSearch(int g, const std::vector<std::vector<bool>>& used, std::mt19937_64& rng, long budget, long& total)
      : g_(g), used_(used), rng_(rng), budget_(budget), total_(total), seen_(static_cast<std::size_t>(g), false) {}

  std::vector<int> find() {
    path_ = {0};
    seen_[0] = true;
    return extend() ? path_ : std::vector<int>{};
  }

 private:
  bool extend() {
    if (--budget_ < 0 || --total_ < 0) return false;
    const int u = path_.back();
    if (static_cast<int>(path_.size()) == g_) return !used_[static_cast<std::size_t>(u)][0];
    std::vector<int> next;
    for (int v = 0; v < g_; ++v)
      if (!seen_[static_cast<std::size_t>(v)] && !used_[static_cast<std::size_t>(u)][static_cast<std::size_t>(v)])
        next.push_back(v);
    // Fisher-Yates with our own draws: std::shuffle's order differs between standard libraries.
    for (std::size_t i = next.size(); i > 1; --i) std::swap(next[i - 1], next[rng_() % i]);
    for (int v : next) {
      path_.push_back(v);
      seen_[static_cast<std::size_t>(v)] = true;
      if (extend()) return true;
      seen_[static_cast<std::size_t>(v)] = false;
      path_.pop_back();
    }
    return false;
  }

  int g_;
  const std::vector<std::vector<bool>>& used_;
  std::mt19937_64& rng_;
  long budget_;
  long& total_;
  std::vector<bool> seen_;
  std::vector<int> path_;
};

// One attempt: rings found one after another, each on the links the earlier ones left.
std::vector<std::vector<int>> greedy_rings(int g, std::mt19937_64& rng, long& total) {
  std::vector<std::vector<bool>> used(static_cast<std::size_t>(g), std::vector<bool>(static_cast<std::size_t>(g), false));
  std::vector<std::vector<int>> rings;
  while (static_cast<int>(rings.size()) < g - 1) {
    std::vector<int> ring = CycleSearch(g, used, rng, 20000, total).find();
    if (ring.empty()) break;
    for (int k = 0; k < g; ++k)
      used[static_cast<std::size_t>(ring[static_cast<std::size_t>(k)])]
          [static_cast<std::size_t>(ring[static_cast<std::size_t>((k + 1) % g)])] = true;
    rings.push_back(std::move(ring));
  }
  return rings;
}

std::vector<std::vector<int>> search_rings(int g) {
  if (g <= 1) return {{0}};
  std::mt19937_64 rng(0x6d657368u + static_cast<std::uint64_t>(g));  // fixed: same g, same rings
  std::vector<std::vector<int>> best;
  long total = 100000000L / g;  // each step scans g GPUs: about 10^8 operations at most
  for (int attempt = 0; attempt < 200 && total > 0 && static_cast<int>(best.size()) < g - 1; ++attempt) {
    auto rings = greedy_rings(g, rng, total);
    if (rings.size() > best.size()) best = std::move(rings);
  }
  return best;
}

}  // namespace

const std::vector<std::vector<int>>& mesh_rings(int g) {
  // One search per node size and process; map entries never move, so the reference stays valid.
  static std::map<int, std::vector<std::vector<int>>> cache;
  static std::mutex guard;
  const std::lock_guard<std::mutex> lock(guard);
  auto it = cache.find(g);
  if (it == cache.end()) it = cache.emplace(g, search_rings(g)).first;
  return it->second;
}

namespace {

std::vector<int> choose_cuts(int g, int channels) {
  const auto& rings = mesh_rings(g);
  std::vector<int> leaving(static_cast<std::size_t>(g), 0), entering(static_cast<std::size_t>(g), 0), cuts;
  for (int c = 0; c < channels; ++c) {
    const auto& ring = rings[static_cast<std::size_t>(c) % rings.size()];
    // The link whose ends are least used so far (then the lesser total, then the first).
    std::tuple<int, int, int> best{g + channels, 0, 0};
    for (int k = 0; k < g; ++k) {
      const int out = leaving[static_cast<std::size_t>(ring[static_cast<std::size_t>(k)])];
      const int in = entering[static_cast<std::size_t>(ring[static_cast<std::size_t>((k + 1) % g)])];
      best = std::min(best, std::tuple<int, int, int>{std::max(out, in), out + in, k});
    }
    const int k = std::get<2>(best);
    ++leaving[static_cast<std::size_t>(ring[static_cast<std::size_t>(k)])];
    ++entering[static_cast<std::size_t>(ring[static_cast<std::size_t>((k + 1) % g)])];
    cuts.push_back(k);
  }
  return cuts;
}

}  // namespace

const std::vector<int>& mesh_ring_cuts(int g, int channels) {
  static std::map<std::pair<int, int>, std::vector<int>> cache;
  static std::mutex guard;
  const std::lock_guard<std::mutex> lock(guard);
  auto it = cache.find({g, channels});
  if (it == cache.end()) it = cache.emplace(std::make_pair(g, channels), choose_cuts(g, channels)).first;
  return it->second;
}

}  // namespace aggsim
