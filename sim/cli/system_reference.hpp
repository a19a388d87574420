#pragma once
// The named systems (sim/platform/systems.hpp) as `aggsim list --systems` prints them, and their
// Markdown reference (platforms/SYSTEMS.md).
#include <string>

namespace aggsim {

std::string system_reference_text();
std::string system_reference_markdown();

}  // namespace aggsim
