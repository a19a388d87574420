#pragma once
// The stack a simulation runs on. SimGrid 3.32's bandwidth solver marks the links a change reaches
// by a depth-first recursion (lmm::System::update_modified_cnst_set_rec), one call per link it has
// not yet marked, so its depth is bounded by the platform's links (each link, and each direction of
// a split-duplex link, is one constraint of the solver) and reaches that bound when the flows of one
// collective chain every link together (a ring over rail-optimised nodes). A call takes 96 bytes of
// stack in Debian's libsimgrid 3.32 (six saved registers, 40 bytes of locals, the return address:
// `objdump -d` of the function), so the main thread's usual 8 MiB holds about 87,000 links; 4,096
// nodes of 8 GPUs and 8 NICs have 307,000 and crashed. Simulations therefore run on a thread of
// their own whose stack is reserved for the deepest recursion of any platform aggsim can hold in
// memory: address space only, its pages cost memory only once the recursion reaches them.
#include <cstddef>
#include <functional>
#include <string>

namespace aggsim {

// Stack per level of the solver's recursion counted when checking a platform: the 96 bytes measured,
// with room for a SimGrid built by another compiler.
inline constexpr std::size_t kSolverFrameBytes = 128;
// Stack for everything but that recursion (the path from the thread's start to the solver).
inline constexpr std::size_t kStackBesidesSolverBytes = std::size_t{1} << 20;
// The simulation thread's stack: 33 million links (2^22 single-GPU hosts of a generated cluster are
// 8.4 million). Where the system refuses that much address space, half as much is asked, down to
// kLeastSimulationStackBytes.
inline constexpr std::size_t kSimulationStackBytes = std::size_t{4} << 30;
inline constexpr std::size_t kLeastSimulationStackBytes = std::size_t{64} << 20;

// Runs `work` on a new thread whose stack is kSimulationStackBytes and waits for it to end; what
// `work` throws is thrown here. SimGrid keeps its engine's state per thread: create, run and destroy
// an engine within one `work`.
void run_on_simulation_stack(const std::function<void()>& work);

// How many links the calling thread's stack holds levels of the solver's recursion for.
std::size_t solver_stack_link_capacity();

// Throws InputError when a platform of `links` links (sg4::Engine::get_link_count) could recurse
// deeper than the calling thread's stack holds; `platform` names it in the message.
void check_solver_stack(std::size_t links, const std::string& platform);

}  // namespace aggsim
