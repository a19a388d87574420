#pragma once
#include <vector>

namespace aggsim {

// Which ranks share a physical node (multi-GPU hosts); every rank is its own node on flat platforms.
struct RankLayout {
  std::vector<int> node_of_rank;  // node index of each rank, nodes numbered 0.. in rank order
};

}  // namespace aggsim
