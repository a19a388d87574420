#pragma once
// Hidden temporaries: what aggsim writes beside a target (a run folder, an output file) before
// renaming it into place, and the proof that aggsim made them, so that cleaning up after a killed
// process can never remove anything else.
//
// A temporary is a folder ".NAME.tmp-HOST-PID-TOKEN" (TOKEN: 128 random bits in hex, drawn when it
// is made) holding the marker file ".aggsim-temporary", whose text names the same token, and the
// content being written ("content"). A SIGKILL leaves it behind; the next aggsim writing beside it
// removes it when all of these hold: the name has that form with this host and a 32-hex-digit
// token, the process PID is no longer running, the entry is a real folder (not a symbolic link),
// and its marker is a regular file (not a symbolic link) whose text is exactly aggsim's for that
// token, or (a writer killed in the instant between making the folder and finishing its marker, when
// nothing else is in it yet) the folder holds nothing but the start of that text. A file or folder
// of a user that merely looks like a temporary (".notes.tmp-HOST-123", ".x.old-HOST-9") fails these
// tests and is never touched.
#include <signal.h>

#include <filesystem>
#include <string>

namespace aggsim {

// Holds back SIGINT, SIGTERM, SIGHUP and SIGQUIT (delivered when it ends): a signal must not stop
// the process between making a temporary and removing or renaming it.
class HeldSignals {
 public:
  HeldSignals();
  ~HeldSignals();
  HeldSignals(const HeldSignals&) = delete;
  HeldSignals& operator=(const HeldSignals&) = delete;

 private:
  sigset_t old_;
};

class Temporary {
 public:
  // Makes the temporary for `name` in `folder` (which must exist), marker included. Throws
  // std::filesystem::filesystem_error; on failure nothing is left.
  Temporary(const std::filesystem::path& folder, const std::string& name);
  // Removes the temporary and whatever it still holds.
  ~Temporary();
  Temporary(const Temporary&) = delete;
  Temporary& operator=(const Temporary&) = delete;

  const std::filesystem::path& path() const { return path_; }
  // Where the file or folder being written goes, inside the temporary.
  std::filesystem::path content() const { return path_ / "content"; }

 private:
  std::filesystem::path path_;
};

// The system's folder for temporary files: TMPDIR when set, else /tmp. Throws InputError naming
// TMPDIR when it is set but empty, or does not name a folder.
std::filesystem::path system_temporary_folder();

// The marker file inside every temporary, and its text for `token`.
inline constexpr const char* kTemporaryMarker = ".aggsim-temporary";
std::string temporary_marker_text(const std::string& token);

// Whether `entry` (in some folder) is a temporary aggsim made on this host whose process has ended
// (see above).
bool is_stale_temporary(const std::filesystem::path& entry);

// Removes the stale temporaries in `folder`; returns how many. Never throws.
int remove_stale_temporaries(const std::filesystem::path& folder);

// Writes `content` into a new file at `path`, never through a symbolic link and never over an existing
// file: the one way aggsim writes a file's bytes (inside a temporary, before it is renamed into
// place). Throws std::filesystem::filesystem_error.
void write_new_file(const std::filesystem::path& path, const std::string& content);

// Writes `content` to `path` whole or not at all: into a temporary beside it, then renamed over
// it, with signals held back; a failure (a full disk) leaves no temporary. Creates missing parent
// folders. Throws std::filesystem::filesystem_error.
void write_file_atomically(const std::filesystem::path& path, const std::string& content);

}  // namespace aggsim
