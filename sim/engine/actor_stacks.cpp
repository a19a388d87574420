#include "sim/engine/actor_stacks.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <simgrid/s4u/Engine.hpp>

#include "sim/core/error.hpp"
#include "sim/core/units.hpp"
#include "sim/scenario/workload_loader.hpp"

namespace aggsim {

std::int64_t peak_actors(const Scenario& sc, const AlgorithmRun& run) {
  return 2 * static_cast<std::int64_t>(sc.ranks) + run.extra_actors;
}

std::int64_t guarded_actor_limit() {
  std::int64_t mappings = 65530;  // Linux's default
  std::ifstream in("/proc/sys/vm/max_map_count");
  if (std::int64_t read = 0; in >> read && read > 0) mappings = read;
  return mappings / 4;
}

void fit_actor_stacks(const Scenario& sc, const AlgorithmRun& run, simgrid::s4u::Engine& engine,
                      const std::vector<std::string>& user_args) {
  const std::int64_t actors = peak_actors(sc, run);
  const double bytes = static_cast<double>(actors) * kActorBytes;
  const std::uint64_t limit = math_memory_limit();
  if (bytes > static_cast<double>(limit))
    throw InputError(fmt::format(
        "{}: ranks: {} ranks run up to {} SimGrid actors at once (2 per rank{}), about {} of stacks and "
        "state at {} each, more than the {} aggsim allows on this machine (half its memory): use fewer "
        "ranks{}",
        sc.where("ranks"), sc.ranks, actors,
        run.extra_actors > 0 ? fmt::format(" and {} of {}", run.extra_actors, run.extra_actors_what) : "",
        units::format_bytes(bytes), units::format_bytes(kActorBytes), units::format_bytes(static_cast<double>(limit)),
        run.extra_actors > 0 ? fmt::format(", or fewer {}", run.extra_actors_what) : ""));
  const bool user_sets = std::any_of(user_args.begin(), user_args.end(), [](const std::string& a) {
    return a.rfind("--cfg=contexts/guard-size", 0) == 0;
  });
  if (!user_sets && actors > guarded_actor_limit()) engine.set_config("contexts/guard-size:0");
}

}  // namespace aggsim
