#pragma once
// Child aggsim processes: the points of a sweep, of calibrate, compare and perf each run in their own
// process (SimGrid allows one Engine per process).
//
// A child is either a fork of this process that calls aggsim's main() with the child's arguments,
// or a fresh aggsim started with exec. Both run the same code on the same arguments and files: a
// fork only skips the ~35 ms of CPU an exec'd aggsim spends loading and linking SimGrid's and
// ns-3's libraries, more than half of what a small calibration point costs. A fork is taken only
// when it starts from the state a fresh process has: main() registered itself, this process runs
// one thread, has never made a SimGrid engine, and the child's executable is this process's own.
// AGGSIM_SPAWN=exec always executes (the outputs are the same; tests check it byte for byte).
#include <sys/types.h>

#include <filesystem>
#include <string>
#include <vector>

namespace aggsim {

// aggsim's main(): a forked child calls it with its own arguments and ends with what it returns.
using ChildMain = int (*)(int argc, char** argv);
// Called once by main(); without it every child is executed.
void register_child_main(ChildMain main);

// The environment variable that forces executed children ("exec"; "fork", the default, forks when
// it can).
inline constexpr const char* kSpawnVariable = "AGGSIM_SPAWN";

// The value of kSpawnVariable: "" (unset or empty), "fork" or "exec". Throws InputError naming the
// variable for anything else.
std::string spawn_mode();

// Starts `exe ARGS...` (ARGS without the program name) as a child with stdin and stdout on
// /dev/null, stderr written to `stderr_file`, and kSweepParentVariable naming this process.
// Throws std::runtime_error when it cannot start.
pid_t start_child(const std::string& exe, const std::vector<std::string>& args,
                  const std::filesystem::path& stderr_file);

// Whether start_child(exe, ...) would fork rather than execute, and if not, why.
bool child_would_fork(const std::string& exe, std::string* why_not = nullptr);

// Set in each child's environment to its parent's pid.
inline constexpr const char* kSweepParentVariable = "AGGSIM_SWEEP_PARENT";
// In a child: be stopped (SIGTERM) when the parent dies, even by SIGKILL.
void stop_with_sweep_parent();

// This process's own executable (/proc/self/exe).
std::string self_executable();

}  // namespace aggsim
