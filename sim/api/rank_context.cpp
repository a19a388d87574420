#include "sim/api/rank_context.hpp"

namespace aggsim {

namespace {
void work(const Comm* comm, int rank, double flops, const char* what) {
  if (flops <= 0) return;
  if (comm) comm->note_work(flops);
  // A replayed step takes its timing, work included, from the step it repeats.
  if (comm && comm->replaying()) return;
  const double start = sg4::Engine::get_clock();
  sg4::this_actor::execute(flops);
  if (comm && comm->tracer()) comm->tracer()->work({rank, what, start, sg4::Engine::get_clock()});
}
}  // namespace

void RankContext::compute(double flops, const char* what) const {
  work(comm, rank, flops, what);
}

void charge_reduce(const Comm& comm, std::uint64_t wire_bytes) {
  work(&comm, comm.rank(), comm.reduce_flops_per_byte() * static_cast<double>(wire_bytes), "reduce");
}

}  // namespace aggsim
