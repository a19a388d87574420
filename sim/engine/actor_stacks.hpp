#pragma once
// SimGrid actors' stacks. Each actor has its own stack; with a guard page (SimGrid's default) each
// stack is two memory mappings, and Linux allows a process vm.max_map_count of them (65,530 by
// default): a run with more actors than that holds aborts in SimGrid ("Failed to protect stack").
// Without guard pages the stacks are plain allocations (a few mappings in all: measured 1,639 with
// 65,600 actors), and only an actor's touched pages cost memory (about 20 KiB each).
// So a run's actors at once (each rank's two, and its algorithm's: MSCCL threadblocks, chunk-level
// NCCL channels) decide: up to a quarter of the mappings, stacks keep their guard pages (they catch
// a stack overflow; results are the same either way); beyond, they go without; and a run whose
// actors would take more than half the machine's memory is refused at `ranks`, naming the count and
// what to change.
#include <cstdint>
#include <string>
#include <vector>

#include "algorithms/registry.hpp"
#include "sim/scenario/scenario.hpp"

namespace simgrid::s4u {
class Engine;
}

namespace aggsim {

// Memory one actor costs with guard pages off (measured on idle MSCCL threadblocks, 18.5 KiB).
constexpr double kActorBytes = 20 * 1024;

// Actors the run keeps at once: two per rank (compute and communication) and the algorithm's own.
std::int64_t peak_actors(const Scenario& scenario, const AlgorithmRun& run);

// The most actors whose stacks keep guard pages: a quarter of the process's allowed mappings.
std::int64_t guarded_actor_limit();

// Throws InputError (at `ranks`) when the actors would take more than half the machine's memory;
// otherwise turns guard pages off when there are more actors than guarded_actor_limit(), unless
// the user's own flags set contexts/guard-size.
void fit_actor_stacks(const Scenario& scenario, const AlgorithmRun& run, simgrid::s4u::Engine& engine,
                      const std::vector<std::string>& user_args);

}  // namespace aggsim
