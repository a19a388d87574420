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

// A reduction of received data is the call's own work (Comm::note_activity), unlike a compressor's.
void charge_reduce(const Comm& comm, std::uint64_t wire_bytes) {
  const double start = sg4::Engine::get_clock();
  work(&comm, comm.rank(), comm.reduce_flops_per_byte() * static_cast<double>(wire_bytes), "reduce");
  comm.note_activity(start, sg4::Engine::get_clock());
}

void charge_reduce_together(const std::vector<Comm*>& comms, const std::vector<sg4::Host*>& hosts,
                            const std::vector<std::uint64_t>& wire_bytes) {
  std::vector<sg4::ExecPtr> execs(comms.size());
  for (std::size_t k = 0; k < comms.size(); ++k) {
    const double flops = comms[k]->reduce_flops_per_byte() * static_cast<double>(wire_bytes[k]);
    if (flops <= 0) continue;
    comms[k]->note_work(flops);
    if (comms[k]->replaying()) continue;  // a replayed step's timing comes from the one it repeats
    execs[k] = sg4::this_actor::exec_init(flops);
    execs[k]->set_host(hosts[k]);
    execs[k]->start();
  }
  for (std::size_t k = 0; k < comms.size(); ++k) {
    if (!execs[k]) continue;
    execs[k]->wait();
    comms[k]->note_activity(execs[k]->get_start_time(), execs[k]->get_finish_time());
    if (comms[k]->tracer())
      comms[k]->tracer()->work(
          {comms[k]->rank(), "reduce", execs[k]->get_start_time(), execs[k]->get_finish_time()});
  }
}

}  // namespace aggsim
