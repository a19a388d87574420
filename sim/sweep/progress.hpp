#pragma once
// Progress of a sweep run for people: a redrawn bar on a terminal, plain lines otherwise (logs, CI).
#include <chrono>
#include <cstdio>
#include <string>

namespace aggsim {

class SweepProgress {
 public:
  SweepProgress(int total, std::FILE* out);

  void started() {
    ++running_;
    draw();
  }
  // A point ended; `what` names it for the plain-line form (and failures on a terminal).
  void finished(bool ok, const std::string& what, double wall_s);
  void close();  // ends the bar's line

 private:
  void draw();
  std::string eta() const;

  int total_, done_ = 0, failed_ = 0, running_ = 0;
  std::FILE* out_;
  bool tty_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace aggsim
