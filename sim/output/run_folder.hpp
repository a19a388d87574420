#pragma once
// Output folders, written so that aggsim can never destroy data it did not write.
//
// Every run folder and sweep folder carries a marker file (.aggsim-run, .aggsim-sweep). aggsim
// replaces or writes into a folder only when it does not exist, is empty, or carries the marker of
// its kind; never a file, a symbolic link, the working directory, `/`, an ancestor of the working
// directory or of a protected file (the scenario). Anything else is an InputError naming the path.
//
// A run folder is written atomically: all files go to a hidden temporary folder beside the target
// (.NAME.tmp-HOST-PID), which replaces the target only when complete, under a lock on the parent
// folder (two runs to the same folder never leave a half-swapped copy), with SIGINT/SIGTERM/SIGHUP
// held back until the swap is over. Temporaries of dead processes of this host are removed on the
// next write beside them (a SIGKILL cannot be caught).
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "sim/core/error.hpp"

namespace aggsim {

using OutputFile = std::pair<std::string, std::string>;  // file name, content

enum class FolderKind { run, sweep };

// The marker file aggsim writes into every folder of that kind.
const char* folder_marker(FolderKind kind);

// Throws InputError (naming `dir` and what to do) unless aggsim may write a folder of `kind` at
// `dir` (see above). `protect`: files the folder must never be or contain.
void check_output_folder(const std::filesystem::path& dir, FolderKind kind,
                         const std::vector<std::filesystem::path>& protect);

// Proves that a folder can be created at `dir` (creates and removes a temporary folder beside it,
// and any missing parent folders), so that a run does not learn it only after simulating.
void check_writable(const std::filesystem::path& dir);

struct RunFolderRequest {
  std::filesystem::path dir;
  std::vector<std::filesystem::path> protect;  // the scenario file(s)
  std::string resolved_yaml;                   // the new run's resolved.yaml
  bool replace_different = false;              // --force: replace a run of a different scenario
};

// Every check of the request (folder, resolved.yaml of a run already there, writability), before
// simulating. Throws InputError.
void prepare_run_folder(const RunFolderRequest& request);

// Checks again (the folder may have changed while simulating), then writes the files and the marker
// and replaces the folder atomically.
void write_run_folder(const RunFolderRequest& request, const std::vector<OutputFile>& files);

// ".NAME.KIND-HOST-PID": the hidden temporary beside NAME of this process (KIND: tmp or old).
// Writes `content` to `path` (created or truncated); a failed write or close throws
// std::filesystem::filesystem_error naming the path and the system's reason.
void write_whole_file(const std::filesystem::path& path, const std::string& content);

std::string temporary_name(const std::string& name, const char* kind);

// Removes the hidden temporaries (folders or files) in `folder` left by dead processes of this host.
void remove_stale_temporaries(const std::filesystem::path& folder);

// A filesystem error as an input error naming its path(s), e.g. "out/x: Permission denied".
InputError path_error(const std::filesystem::filesystem_error& error);

}  // namespace aggsim
