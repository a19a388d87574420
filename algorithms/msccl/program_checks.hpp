#pragma once
// Checks of an MSCCL program as a whole, after each element was read: every dependency names an
// existing step that the runtime signals (hasdep="1"); no dependency cycle inside a GPU; each
// connection (sender, receiver, channel) has one sending and one receiving threadblock whose
// messages match one for one in number and chunk count. Throws InputError at the offending
// element's line.
#include "algorithms/msccl/program.hpp"

namespace aggsim {

void check_msccl_program_structure(const MscclProgram& program);

}  // namespace aggsim
