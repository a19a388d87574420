#pragma once
// A sweep's output folder. Everything a runner needs to resume is on disk:
//   manifest.csv, manifest.json   the points: index, id, swept values, scenario file
//   points/<id>.yaml              each point's resolved scenario (what `--point` runs)
//   runs/<id>/                    each finished point's run folder (written atomically)
//   failed/<id>.log               the exit status and stderr of a point's last failed attempt
//   results.csv                   one row per point (merge)
//   .aggsim-sweep                 marker: aggsim writes only into folders that carry it (or new ones)
// A point is finished exactly when runs/<id>/summary.json exists and is a JSON object.
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "sim/sweep/sweep.hpp"

namespace aggsim {

class SweepFolder {
 public:
  explicit SweepFolder(std::filesystem::path root) : root_(std::move(root)) {}

  const std::filesystem::path& root() const { return root_; }
  std::filesystem::path run_dir(const std::string& id) const { return root_ / "runs" / id; }
  std::filesystem::path point_file(const std::string& id) const { return root_ / "points" / (id + ".yaml"); }
  std::filesystem::path failure_log(const std::string& id) const { return root_ / "failed" / (id + ".log"); }
  std::filesystem::path logs_dir() const { return root_ / "logs"; }  // children's stderr while they run
  std::filesystem::path stderr_file(const std::string& id) const { return logs_dir() / (id + ".stderr"); }
  std::filesystem::path results_file() const { return root_ / "results.csv"; }

  // Refuses (InputError) a folder aggsim must not write into (see run_folder.hpp).
  void check(const std::string& sweep_file) const;

  // Finished: runs/<id>/summary.json holds a JSON object. Damaged: it exists but does not (the
  // point is unfinished and runs again).
  bool finished(const std::string& id) const;
  bool damaged(const std::string& id) const;
  bool failed(const std::string& id) const;
  std::optional<nlohmann::ordered_json> summary(const std::string& id) const;

  // Writes points/ and the manifests (files whose content is unchanged are left alone).
  void write_expansion(const Sweep& sweep) const;
  void record_failure(const std::string& id, const std::string& log) const;
  void clear_failure(const std::string& id) const;
  // Removes temporaries (hidden .NAME.tmp-HOST-PID) left by dead processes of this host.
  void remove_stale_temporaries() const;
  // Writes results.csv: id, status, swept keys, then every summary.json field, then error.
  // Returns the number of points per status as "N done, N failed, N pending".
  std::string merge(const Sweep& sweep) const;

 private:
  std::filesystem::path root_;
};

// Held by a local runner for its whole run (flock on the sweep folder, released when the process
// ends however it ends): a second runner on the same folder is refused instead of running the
// same points twice.
class RunnerLock {
 public:
  explicit RunnerLock(const SweepFolder& folder);
  ~RunnerLock();
  RunnerLock(const RunnerLock&) = delete;
  RunnerLock& operator=(const RunnerLock&) = delete;

 private:
  int fd_ = -1;
};

// Writes a file atomically (temporary file beside it, then rename).
void write_file_atomic(const std::filesystem::path& path, const std::string& content);
std::string read_text_file(const std::filesystem::path& path);

}  // namespace aggsim
