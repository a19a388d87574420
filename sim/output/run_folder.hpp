#pragma once
// Output folders, written so that aggsim can never destroy data it did not write.
//
// Every run folder and sweep folder carries a marker file (.aggsim-run, .aggsim-sweep): a regular
// file (not a symbolic link) whose text begins with kMarkerText. aggsim replaces or writes into a
// folder only when it does not exist, is empty, or carries such a marker of its kind; never a
// file, a symbolic link, the working directory, `/`, an ancestor of the working directory or of a
// protected file (the scenario). A folder whose marker is empty (as a person or an older tool may
// leave it) is read as before but never replaced: the error says how to confirm it. Anything else
// is an InputError naming the path.
//
// A run folder is written atomically: all files go to a hidden temporary beside the target
// (sim/output/temporary.hpp), which replaces the target only when complete, under a lock on the
// parent folder (two runs to the same folder never leave a half-swapped copy), with
// SIGINT/SIGTERM/SIGHUP held back until the swap is over. Temporaries of dead processes of this
// host are removed on the next write beside them (a SIGKILL cannot be caught).
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "sim/core/error.hpp"
#include "sim/output/temporary.hpp"

namespace aggsim {

using OutputFile = std::pair<std::string, std::string>;  // file name, content

enum class FolderKind { run, sweep };

// The marker file aggsim writes into every folder of that kind, and its text.
const char* folder_marker(FolderKind kind);
std::string folder_marker_text(FolderKind kind);
// How every marker's text begins: what proves that aggsim wrote the folder.
inline constexpr const char* kMarkerText = "This folder was written by aggsim";

// none: no marker; aggsim: a regular file beginning with kMarkerText; empty: a regular empty file;
// foreign: anything else (a symbolic link, a folder, other text).
enum class MarkerState { none, aggsim, empty, foreign };
MarkerState marker_state(const std::filesystem::path& marker);

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

// A filesystem error as an input error naming its path(s), e.g. "out/x: Permission denied".
InputError path_error(const std::filesystem::filesystem_error& error);
// Throws InputError when `path` is relative and the working directory it is relative to no longer
// exists (removed while aggsim ran from it), naming the path, `what` (e.g. "--csv") and $PWD.
void check_working_directory(const std::filesystem::path& path, const std::string& what);

}  // namespace aggsim
