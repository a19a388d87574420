#include "sim/sweep/progress.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cmath>

#include "sim/core/error.hpp"

namespace aggsim {

SweepProgress::SweepProgress(int total, std::FILE* out)
    : total_(total),
      out_(out),
      tty_(::isatty(::fileno(out)) != 0),
      start_(std::chrono::steady_clock::now()) {}

std::string SweepProgress::eta() const {
  const int ended = done_ + failed_;
  if (ended == 0) return "--:--";
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const auto left = static_cast<long>(std::lround(elapsed / ended * (total_ - ended)));
  return left >= 3600 ? fmt::format("{}:{:02}:{:02}", left / 3600, left / 60 % 60, left % 60)
                      : fmt::format("{}:{:02}", left / 60, left % 60);
}

void SweepProgress::draw() {
  if (!tty_) return;
  constexpr int width = 30;
  const int filled = total_ ? (done_ + failed_) * width / total_ : width;
  fmt::print(out_, "\r\033[K[{}{}] {}/{} done, {} failed, {} running, ETA {}", std::string(filled, '#'),
             std::string(width - filled, '.'), done_, total_, failed_, running_, eta());
  std::fflush(out_);
}

void SweepProgress::finished(bool ok, const std::string& what, double wall_s) {
  --running_;
  ok ? ++done_ : ++failed_;
  if (tty_) {
    if (!ok) fmt::print(out_, "\r\033[KFAILED {}\n", printable(what));
    draw();
  } else {
    fmt::print(out_, "[{}/{}] {} {} ({:.1f} s; {} failed so far, ETA {})\n", done_ + failed_, total_,
               ok ? "done" : "FAILED", printable(what), wall_s, failed_, eta());
    std::fflush(out_);
  }
}

void SweepProgress::close() {
  if (tty_) fmt::print(out_, "\n");
  std::fflush(out_);
}

}  // namespace aggsim
