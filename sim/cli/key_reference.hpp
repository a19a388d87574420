#pragma once
// `aggsim list --keys`: every key a scenario (and a sweep block) may hold, with its type, default
// and meaning, printed from the specs the loaders read with (sim/scenario/scenario_keys.hpp and each
// component's table), so it cannot drift. scenarios/KEYS.md is its Markdown form, checked by a test.
#include <string>

namespace aggsim::cli {

std::string key_reference_text();
std::string key_reference_markdown();

}  // namespace aggsim::cli
