#pragma once
// Command-line errors in aggsim's one error format: "--option: message" (or "NAME: message" for a
// positional argument), to be printed after "aggsim: error: ".
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace aggsim::cli {

// `args`: the command line without the program name (names a misspelt command).
std::string option_error(const CLI::ParseError& error, const std::vector<std::string>& args);

}  // namespace aggsim::cli
