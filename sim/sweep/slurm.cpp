#include "sim/sweep/slurm.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <numeric>
#include <regex>

#include "sim/core/error.hpp"
#include "sim/core/strings.hpp"

namespace aggsim {

namespace fs = std::filesystem;

namespace {

std::string absolute_path(const std::string& p) {
  return fs::absolute(p).lexically_normal().string();
}

// std::regex recurses once per character matched: a value of 50 KB overflowed the stack. No Slurm
// value or path aggsim writes is longer than 4096 characters, so longer ones fail the match
// without reaching the regex.
constexpr std::size_t kMaxMatchedLength = 4096;

bool matches(const std::string& text, const char* pattern) {
  return text.size() <= kMaxMatchedLength && std::regex_match(text, std::regex(pattern));
}

// A #SBATCH line is read by sbatch, not by the shell, and has no quoting: what goes there must be
// one plain word of Slurm's syntax.
void check_sbatch_value(const std::string& option, const std::string& value, const char* pattern,
                        const std::string& expected) {
  if (!matches(value, pattern))
    throw InputError(fmt::format("{}: '{}': {} (it goes on a #SBATCH line, which cannot be quoted)", option,
                                 value, expected));
}

void check_options(const SlurmOptions& o, const std::string& out) {
  if (!o.partition.empty())
    check_sbatch_value("--partition", o.partition, "[A-Za-z0-9_.,-]+",
                       "expected a partition name (letters, digits, _ . - , only)");
  if (!o.account.empty())
    check_sbatch_value("--account", o.account, "[A-Za-z0-9_.-]+",
                       "expected an account name (letters, digits, _ . - only)");
  if (!o.mem.empty())
    check_sbatch_value("--mem", o.mem, "[0-9]+[KMGTkmgt]?",
                       "expected Slurm's memory syntax, e.g. 4000M or 16G");
  if (!o.time.empty() && !valid_slurm_time(o.time))
    throw InputError(
        fmt::format("--time: '{}': expected one of Slurm's formats: minutes, minutes:seconds, "
                    "hours:minutes:seconds, days-hours, days-hours:minutes, "
                    "days-hours:minutes:seconds (e.g. 01:30:00 or 2-00:00:00)",
                    o.time));
  if (o.max_running < 0) throw InputError("--max-running: must be at least 1");
  for (const auto& line : o.sbatch_lines) {
    if (line.find_first_of(std::string("\n\r\0", 3)) != std::string::npos)
      throw InputError(fmt::format("--sbatch: '{}': must be one line (no newline)", line));
    if (line.empty() || line[0] != '-')
      throw InputError(
          fmt::format("--sbatch: '{}': expected an sbatch option such as --gres=gpu:1 (written after "
                      "#SBATCH)",
                      line));
  }
  if (!matches(out, "[A-Za-z0-9_./+,=@:~-]+"))
    throw InputError(
        fmt::format("{}: the sweep folder's path goes on the #SBATCH --output line, which cannot be quoted: "
                    "choose an --out "
                    "whose absolute path has only letters, digits and _ . / + , = @ : ~ -",
                    out));
}

std::string job_name_of(const std::string& name) {
  std::string job = "aggsim-";
  for (char c : name.substr(0, 100))
    job += std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-' ? c : '_';
  return job;
}

}  // namespace

bool valid_slurm_time(const std::string& time) {
  return matches(time,
                 "[0-9]+(:[0-9]+){0,2}|[0-9]+-[0-9]+(:[0-9]+){0,2}|UNLIMITED|INFINITE|unlimited|infinite");
}

std::vector<std::vector<int>> balance_points(const std::vector<double>& costs, int tasks, int chunk) {
  std::vector<int> order(costs.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return costs[a] > costs[b]; });
  std::vector<std::vector<int>> groups(static_cast<std::size_t>(std::max(1, tasks)));
  std::vector<double> load(groups.size(), 0);
  for (int p : order) {
    std::size_t best = groups.size();
    for (std::size_t g = 0; g < groups.size(); ++g)
      if (static_cast<int>(groups[g].size()) < chunk && (best == groups.size() || load[g] < load[best]))
        best = g;
    if (best == groups.size()) best = 0;  // cannot happen when tasks * chunk >= points
    groups[best].push_back(p);
    load[best] += costs[p];
  }
  for (auto& g : groups) std::sort(g.begin(), g.end());
  return groups;
}

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

namespace {

// Where and how the job array runs, as the script's opening lines.
std::string array_header(const SlurmScript& script, int points, const SlurmOptions& options,
                         const std::string& out, const std::string& common) {
  std::string s = "#!/bin/bash\n";
  s += fmt::format(
      "# Slurm job array for the aggsim sweep {} ({} points in {} array tasks, balanced by cost).\n",
      script.job_name, points, script.tasks);
  s += "# Submit: sbatch THIS_FILE; afterwards: aggsim sweep merge SWEEP_FILE --out OUT (writes "
       "results.csv).\n";
  s += "# Finished points are skipped, so resubmitting after a failure or timeout only runs what is left.\n";
  s += fmt::format("#SBATCH --job-name={}\n", script.job_name);
  s += fmt::format("#SBATCH --array=0-{}{}\n", script.tasks - 1,
                   options.max_running > 0 ? fmt::format("%{}", options.max_running) : "");
  s += "#SBATCH --ntasks=1\n#SBATCH --cpus-per-task=1\n";
  s += fmt::format("#SBATCH --output={}/slurm/logs/%A_%a.out\n", out);
  if (!options.time.empty()) s += fmt::format("#SBATCH --time={}\n", options.time);
  if (!options.mem.empty()) s += fmt::format("#SBATCH --mem={}\n", options.mem);
  return s + common;
}

// The point ids of each array task, as a bash array indexed by the task.
std::string task_table(const Sweep& sweep, const SlurmScript& script) {
  std::string s = "# The point ids of each array task (12 hex digits each; see manifest.csv for their values).\n";
  s += "tasks=(\n";
  for (const auto& group : script.task_points) {
    std::string ids;
    for (int i : group) {
      const std::string& id = sweep.points[static_cast<std::size_t>(i)].id;
      if (!matches(id, "[0-9a-f]{12}")) throw std::logic_error("a point id that is not 12 hex digits: " + id);
      ids += (ids.empty() ? "" : " ") + id;
    }
    s += fmt::format("  \"{}\"\n", ids);
  }
  return s + ")\n";
}

// The task's points one after another; a failed point makes the task fail but the others still run.
std::string point_loop(const Sweep& sweep, const SlurmOptions& options) {
  std::string s = "read -r -a ids <<< \"${tasks[SLURM_ARRAY_TASK_ID]}\"\n";
  s += "echo \"aggsim: array task ${SLURM_ARRAY_TASK_ID} runs ${#ids[@]} point(s): ${ids[*]}\"\n";
  s += "status=0\n";
  s += "for id in \"${ids[@]}\"; do\n";
  s += "  echo \"aggsim: point $id: start $(date -u +%FT%TZ) on $(hostname)\"\n";
  std::string command = fmt::format("  {} sweep run {} --point \"$id\" --out \"$out\"",
                                    shell_quote(options.exe), shell_quote(absolute_path(sweep.file)));
  for (const auto& a : options.extra_args) command += " " + shell_quote(a);
  s += command + "\n";
  // A point that died without a word (signal, out of memory) still leaves a failure record.
  s += "  rc=$?\n  echo \"aggsim: point $id: end $(date -u +%FT%TZ), exit status $rc\"\n";
  s += "  if [ $rc -ne 0 ]; then\n    status=1\n";
  s += "    log=\"$out/failed/$id.log\"\n";
  s += "    [ -f \"$log\" ] || { mkdir -p \"$out/failed\"; echo \"exit status $rc (Slurm job "
       "${SLURM_ARRAY_JOB_ID:-?}_${SLURM_ARRAY_TASK_ID}; log: $AGGSIM_TASK_LOG)\" > \"$log\"; }\n";
  s += "  fi\n";
  return s + "done\nexit $status\n";
}

// The merge job and the script that submits it after the array.
void add_merge_scripts(SlurmScript& script, const Sweep& sweep, const SlurmOptions& options,
                       const std::string& out, const std::string& workdir, const std::string& common) {
  std::string& m = script.merge_text;
  m += "#!/bin/bash\n";
  m += fmt::format("# Merges the results of the aggsim sweep {} once its job array has ended.\n",
                   script.job_name);
  m += fmt::format("#SBATCH --job-name={}-merge\n", script.job_name);
  m += "#SBATCH --ntasks=1\n#SBATCH --cpus-per-task=1\n";
  m += fmt::format("#SBATCH --output={}/slurm/logs/merge_%j.out\n", out);
  m += common;
  m += fmt::format("cd {} || exit 1\n", shell_quote(workdir));
  m += fmt::format("exec {} sweep merge {} --out {}\n", shell_quote(options.exe),
                   shell_quote(absolute_path(sweep.file)), shell_quote(out));
  std::string& w = script.submit_text;
  w += "#!/bin/bash\n";
  w += "# Submits the job array, then the merge job to run when the array has ended (whatever its "
       "outcome).\n";
  w += "set -euo pipefail\n";
  w += fmt::format("array=$(sbatch --parsable {})\n", shell_quote(out + "/slurm/" + script.file_stem + ".sbatch"));
  w += "array=${array%%;*}\n";
  w += fmt::format("merge=$(sbatch --parsable --dependency=afterany:\"$array\" {})\n",
                   shell_quote(out + "/slurm/" + script.file_stem + "-merge.sbatch"));
  w += "echo \"submitted job array $array and merge job ${merge%%;*} (runs after the array)\"\n";
}

}  // namespace

SlurmScript sbatch_script(const Sweep& sweep, const SweepFolder& folder, const SlurmOptions& options) {
  const std::string out = absolute_path(folder.root().string());
  check_options(options, out);
  SlurmScript script;
  const int points = static_cast<int>(sweep.points.size());
  const int max_tasks = std::max(1, options.max_array_size);  // indices 0 .. MaxArraySize-1
  script.chunk = std::max({1, options.chunk, (points + max_tasks - 1) / max_tasks});
  script.tasks = std::max(1, (points + script.chunk - 1) / script.chunk);
  script.job_name = job_name_of(sweep.name);
  script.file_stem = script.job_name.substr(std::string("aggsim-").size());
  std::vector<double> costs;
  for (const auto& p : sweep.points) costs.push_back(p.cost);
  script.task_points = balance_points(costs, script.tasks, script.chunk);
  const std::string workdir = options.workdir.empty() ? fs::current_path().string() : options.workdir;

  std::string common;  // #SBATCH lines both jobs share
  if (!options.partition.empty()) common += fmt::format("#SBATCH --partition={}\n", options.partition);
  if (!options.account.empty()) common += fmt::format("#SBATCH --account={}\n", options.account);
  for (const auto& line : options.sbatch_lines) common += fmt::format("#SBATCH {}\n", line);

  std::string& s = script.text;
  s += array_header(script, points, options, out, common);
  s += "set -u\n";
  s += fmt::format("cd {} || exit 1\n", shell_quote(workdir));
  s += fmt::format("out={}\n", shell_quote(out));
  // A point killed by Slurm (time limit, memory) is recorded as failed with this log's path.
  s += "export AGGSIM_TASK_LOG=\"$out/slurm/logs/${SLURM_ARRAY_JOB_ID:-0}_${SLURM_ARRAY_TASK_ID}.out\"\n";
  s += task_table(sweep, script);
  s += point_loop(sweep, options);
  if (options.merge_job) add_merge_scripts(script, sweep, options, out, workdir, common);
  return script;
}

}  // namespace aggsim
