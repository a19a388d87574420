#pragma once
// Transfers whose route latency their receiver charges (Comm::charge_latency_at_receiver): the
// network leaves it out for them alone (a latency factor of 0), so a sender's slot frees when the
// bytes arrive, as in a run whose transfers all carry none (AlgorithmRun::pieces_pay_latency).
// SimGrid 3.32 asks the network model's latency-factor callback once per transfer, when the
// transfer starts (both sides posted), with its size and its hosts only; a marked transfer is
// known there by its sender's host and size. A transfer of the same size from the same host that is
// not marked and starts while a marked one waits could take its mark: a marked call's rank sends
// nothing else meanwhile, so only another actor on the same host could.
#include <simgrid/s4u/Host.hpp>

namespace aggsim::receiver_latency {

// Whether the run's network leaves marked transfers' latency out (install_receiver_latency);
// off, marking does nothing and a caller keeps the latency in the network.
void set_available(bool on);
bool available();
// A transfer of `bytes` from `src` is about to be posted: its latency stays out of the network.
void mark(const simgrid::s4u::Host* src, double bytes);
// The network starts a transfer of `bytes` from `src`: whether it was marked (the mark is used up).
bool take(const simgrid::s4u::Host* src, double bytes);
// A new run: no marks, not available.
void reset();

}  // namespace aggsim::receiver_latency
