#pragma once
// Errors the user can fix: bad scenario files, platforms or command lines.
// The message is complete and printable as is ("file:line:col: key.path: what is wrong"): every
// byte a terminal would not show as text (control characters, NUL, bytes that are not UTF-8,
// invisible format characters such as bidirectional overrides) is written as \xNN when the error is
// made, so a path or a value from a file can neither cut the message short nor drive the terminal.
#include <stdexcept>
#include <string>
#include <vector>

namespace aggsim {

// `text` with every unprintable byte written as \xNN (printable UTF-8, e.g. "é", stays). Applying
// it twice changes nothing.
std::string printable(const std::string& text);
// The same line by line, line breaks kept: for what aggsim prints on a terminal besides errors
// (a run's start line and summary, which show the scenario's name and paths).
std::string printable_lines(const std::string& text);

class InputError : public std::runtime_error {
 public:
  explicit InputError(const std::string& message) : std::runtime_error(printable(message)) {}
  // A message followed by indented lines of context ("message\n  line"), each made printable.
  InputError(const std::string& message, const std::vector<std::string>& context);
};

// A simulation that ended without a result: it deadlocked (ranks still waiting when no event is
// left) or its clock left the finite numbers. The message names the cause; exit status 1.
class SimulationError : public std::runtime_error {
 public:
  explicit SimulationError(const std::string& message) : std::runtime_error(printable(message)) {}
};

// SIGINT, SIGTERM or SIGHUP caught while a batch of child processes ran: thrown so that every
// temporary on the way up is removed; main() then ends the process by the same signal.
class Interrupted : public std::runtime_error {
 public:
  explicit Interrupted(int signal) : std::runtime_error("interrupted by a signal"), signal_(signal) {}
  int signal() const { return signal_; }

 private:
  int signal_;
};

}  // namespace aggsim
