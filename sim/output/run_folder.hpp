#pragma once
// Writes a run's output folder atomically: all files go to a hidden temporary folder beside the
// target, which is renamed into place only when complete. A failed run leaves nothing behind; an
// existing folder of the same name is replaced whole.
#include <string>
#include <utility>
#include <vector>

namespace aggsim {

using OutputFile = std::pair<std::string, std::string>;  // file name, content

void write_run_folder(const std::string& dir, const std::vector<OutputFile>& files);

}  // namespace aggsim
