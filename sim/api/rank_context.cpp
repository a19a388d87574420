#include "sim/api/rank_context.hpp"

namespace aggsim {

void RankContext::compute(double flops, const char* what) const {
  if (flops <= 0) return;
  const double start = sg4::Engine::get_clock();
  sg4::this_actor::execute(flops);
  if (comm && comm->tracer()) comm->tracer()->work({rank, what, start, sg4::Engine::get_clock()});
}

}  // namespace aggsim
