#pragma once
// A single output file named on the command line (calibrate --out and its report, compare --csv):
// refused before any work when it cannot be an output, written whole or not at all.
//
// aggsim writes such a file only as a regular file, new or replaced whole: a folder, a device
// (/dev/full), a FIFO, a socket or a symbolic link at the path is refused, as is an input of the same
// command (the scenario, a measurement log). The write goes through a temporary beside the file
// (sim/output/temporary.hpp) with signals held back, so a failure or a signal leaves the old file
// as it was and no temporary behind.
#include <filesystem>
#include <string>
#include <vector>

namespace aggsim {

// Throws InputError ("--OPTION: PATH: what is wrong", as every option error) unless aggsim may
// write `path`; `option` names the command-line option it came from ("--csv"). Creates missing
// parent folders and proves that a file can be made beside it.
void prepare_output_file(const std::filesystem::path& path, const std::string& option,
                         const std::vector<std::filesystem::path>& protect);

// The same checks again (the place may have changed meanwhile), then the atomic write.
void write_output_file(const std::filesystem::path& path, const std::string& option,
                       const std::string& content, const std::vector<std::filesystem::path>& protect);

}  // namespace aggsim
