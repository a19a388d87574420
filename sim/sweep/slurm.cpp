#include "sim/sweep/slurm.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <regex>

namespace aggsim {

namespace fs = std::filesystem;

namespace {

std::string shell_quote(const std::string& s) {
  if (!s.empty() &&
      s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./=:+,@%") ==
          std::string::npos)
    return s;
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string absolute(const std::string& p) {
  return fs::absolute(p).lexically_normal().string();
}

}  // namespace

int slurm_max_array_size() {
  std::FILE* pipe = ::popen("scontrol show config 2>/dev/null", "r");
  if (!pipe) return 1001;
  std::string text;
  char buffer[4096];
  while (std::size_t n = std::fread(buffer, 1, sizeof buffer, pipe)) text.append(buffer, n);
  ::pclose(pipe);
  std::smatch m;
  if (std::regex_search(text, m, std::regex(R"(MaxArraySize\s*=\s*(\d+))"))) return std::stoi(m[1]);
  return 1001;
}

SlurmScript sbatch_script(const Sweep& sweep, const SweepFolder& folder, const SlurmOptions& options) {
  SlurmScript script;
  const int points = static_cast<int>(sweep.points.size());
  const int max_tasks = std::max(1, options.max_array_size);  // indices 0 .. MaxArraySize-1
  script.chunk = std::max({1, options.chunk, (points + max_tasks - 1) / max_tasks});
  script.tasks = std::max(1, (points + script.chunk - 1) / script.chunk);
  const std::string out = absolute(folder.root().string());

  std::string& s = script.text;
  s += "#!/bin/bash\n";
  s += fmt::format("# Slurm job array for the aggsim sweep '{}' ({} points, {} per array task).\n",
                   sweep.name, points, script.chunk);
  s += "# Submit: sbatch THIS_FILE; afterwards: aggsim sweep merge SWEEP_FILE --out OUT (writes "
       "results.csv).\n";
  s += "# Finished points are skipped, so resubmitting after a failure or timeout only runs what is left.\n";
  s += fmt::format("#SBATCH --job-name=aggsim-{}\n", sweep.name);
  s += fmt::format("#SBATCH --array=0-{}\n", script.tasks - 1);
  s += "#SBATCH --ntasks=1\n#SBATCH --cpus-per-task=1\n";
  s += fmt::format("#SBATCH --output={}/slurm/logs/%A_%a.out\n", out);
  if (!options.partition.empty()) s += fmt::format("#SBATCH --partition={}\n", options.partition);
  if (!options.time.empty()) s += fmt::format("#SBATCH --time={}\n", options.time);
  s += "set -u\n";
  s += fmt::format("cd {}\n", shell_quote(fs::current_path().string()));
  s += "points=(\n";
  for (const auto& p : sweep.points) s += fmt::format("  {}  # {}\n", p.id, describe_point(sweep, p));
  s += ")\n";
  s += fmt::format("chunk={}\n", script.chunk);
  s += "first=$((SLURM_ARRAY_TASK_ID * chunk))\nstatus=0\n";
  s += "for ((i = first; i < first + chunk && i < ${#points[@]}; i++)); do\n";
  std::string command =
      fmt::format("  {} sweep run {} --point \"${{points[i]}}\" --out {}", shell_quote(options.exe),
                  shell_quote(absolute(sweep.file)), shell_quote(out));
  for (const auto& a : options.extra_args) command += " " + shell_quote(a);
  s += command + "\n";
  // A point that died without a word (signal, out of memory) still leaves a failure record.
  s += "  rc=$?\n  if [ $rc -ne 0 ]; then\n    status=1\n";
  s += fmt::format("    log={}/failed/${{points[i]}}.log\n", shell_quote(out));
  s += "    [ -f \"$log\" ] || { mkdir -p \"$(dirname \"$log\")\"; echo \"exit status $rc (Slurm job "
       "${SLURM_ARRAY_JOB_ID:-?}_${SLURM_ARRAY_TASK_ID})\" > \"$log\"; }\n";
  s += "  fi\n";
  s += "done\nexit $status\n";
  return script;
}

}  // namespace aggsim
