#pragma once
// Command-line errors in aggsim's one error format: "--option: message" (or "NAME: message" for a
// positional argument), to be printed after "aggsim: error: ".
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace aggsim::cli {

// `args`: the command line without the program name (names a misspelt command).
std::string option_error(const CLI::ParseError& error, const std::vector<std::string>& args);

// An option given an empty value (`--out ''`, `--out=`), before any check of the value: "--out: the
// value is empty (...)", or "" when there is none. Options are looked up in the subcommand the
// arguments have reached.
std::string empty_option_value(CLI::App& app, const std::vector<std::string>& args);

// After parsing: a positional argument given as '' ("scenario: the value is empty ..."), or "".
std::string empty_positional(CLI::App& app);

}  // namespace aggsim::cli
