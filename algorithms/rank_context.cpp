#include "algorithms/rank_context.hpp"

namespace aggsim {

void RankContext::compute(double flops) const {
  if (flops > 0) sg4::this_actor::execute(flops);
}

}  // namespace aggsim
