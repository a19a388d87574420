#include "sim/scenario/scenario_keys.hpp"

#include "sim/platform/platform_spec.hpp"
#include "sim/platform/systems.hpp"
#include "sim/platform/topology.hpp"
#include "sim/workload/options.hpp"

namespace aggsim {

std::vector<std::string> network_preset_names() {
  return {"auto", "lv08", "alpha_beta", "ns3"};
}

std::vector<ParamSpec> top_level_param_specs() {
  return {
      ParamSpec("name", ParamKind::text, "",
                "the run's name and default output folder out/<name> (default: "
                "the file's stem)"),
      ParamSpec("description", ParamKind::text, "", "free text for people; not used"),
      ParamSpec("seed", ParamKind::integer, "1", "all randomness derives from it").between(0, 9.2e18),
      ParamSpec("ranks", ParamKind::integer, "16",
                "simulated workers, mapped to hosts in natural name order (host-2 before host-10)")
          .between(1, 1 << 22),
      ParamSpec("steps", ParamKind::integer, "3",
                "training steps; without a workload a step is the aggregation alone")
          .between(1, 1e9),
      ParamSpec("network", ParamKind::choice, "auto",
                "SimGrid network model: auto (each link class as what it is: latency + size/bandwidth "
                "inside nodes and on InfiniBand/RoCE fabrics, lv08 between nodes on an ethernet "
                "fabric), lv08 (calibrated TCP), alpha_beta (latency + size/bandwidth exactly), ns3 "
                "(packet level, small cases)")
          .one_of(network_preset_names()),
      ParamSpec("calibration", ParamKind::text, "",
                "a file written by `aggsim calibrate`: fitted latency and bandwidth factors (found like "
                "platform files)"),
  };
}

const std::vector<std::string>& scenario_sections() {
  static const std::vector<std::string> sections = {"platform", "model",   "algorithm", "compression",
                                                    "workload", "compute", "engine",    "parallel",
                                                    "output"};
  return sections;
}

std::vector<ParamSpec> platform_param_specs() {
  std::vector<std::string> topologies;
  for (const auto& t : topology_table()) topologies.push_back(t.name);
  std::vector<std::string> systems;
  for (const auto& s : system_table()) systems.push_back(s.name);
  return {
      ParamSpec("file", ParamKind::text, "",
                "a SimGrid platform XML, found in the working directory, the scenario's folder, then the "
                "installed data (`cluster_16` names platforms/cluster_16.xml); or give topology"),
      ParamSpec("topology", ParamKind::choice, "", "a generated platform; its keys are listed below")
          .one_of(topologies),
      ParamSpec("system", ParamKind::choice, "",
                "a named machine (aggsim list --systems): its generator keys' values and its fabric, over a "
                "full-bisection fat_tree unless topology is given; keys given beside it win")
          .one_of(systems),
      ParamSpec("fabric", ParamKind::choice, "",
                "the network between nodes, after which `network: auto` models their links (infiniband, "
                "roce: latency + size/bandwidth; ethernet: lv08); default: a platform file's aggsim_fabric "
                "property, else infiniband")
          .one_of(fabric_names()),
      ParamSpec("overrides", ParamKind::text, "",
                "per-host or per-node values of a generated platform; later entries win")
          .shown_as("list of mappings"),
  };
}

std::vector<ParamSpec> override_selector_param_specs() {
  return {
      ParamSpec("hosts", ParamKind::text, "", "host names, with ranges: \"node-3-gpu-[0-7]\" (or nodes)"),
      ParamSpec("nodes", ParamKind::text, "", "node indices: \"0-3,7\" (or hosts)"),
  };
}

std::vector<ParamSpec> compute_param_specs() {
  std::vector<ParamSpec> specs = {
      ParamSpec("speed_factors", ParamKind::text, "",
                "relative speed of each rank: [f, ...] (one per rank, or one for all) or {slow_ranks: [r, "
                "...], factor: f}")
          .shown_as("list or mapping"),
      ParamSpec("reduce_speed", ParamKind::text, "host",
                "bytes per second a rank reduces received data at (200GBps, 1.6Tbps): host = 4 bytes x the "
                "host's flop/s; 0 = free")
          .shown_as("host, 0 or bandwidth"),
  };
  for (ParamSpec spec : straggler_param_specs()) {
    spec.key = "straggler." + spec.key;
    specs.push_back(std::move(spec));
  }
  return specs;
}

std::vector<ParamSpec> engine_param_specs() {
  return {ParamSpec("replay", ParamKind::boolean, "true",
                    "reuse the timing of repeated steps (sim/engine/README.md, Replay of repeated steps)")};
}

std::vector<ParamSpec> parallel_param_specs() {
  return {ParamSpec("tensor", ParamKind::integer, "1",
                    "tensor-parallel ranks (Megatron-LM's order: tensor fastest, then data, then pipeline); "
                    "each holds 1/tensor of every layer and aggregates it with the ranks of its data-parallel "
                    "group; tensor-parallel traffic itself is not simulated")
              .between(1, 1 << 22),
          ParamSpec("pipeline", ParamKind::integer, "1",
                    "pipeline stages (Megatron-LM's order: the slowest index); the layer table is cut into "
                    "contiguous stages of near-equal parameters, each aggregated by its own data-parallel groups "
                    "at once; pipeline-parallel traffic and the pipeline's bubble are not simulated")
              .between(1, 1 << 22)};
}

std::vector<ParamSpec> output_param_specs() {
  return {
      ParamSpec("dir", ParamKind::text, "", "the run folder (default out/<name>; --out wins)"),
      ParamSpec("trace", ParamKind::boolean, "false",
                "also write trace.json (Perfetto timeline) and links.csv (per-link bytes)"),
  };
}

std::vector<std::string> spec_keys(const std::vector<ParamSpec>& specs) {
  std::vector<std::string> keys;
  for (const auto& group : group_params(specs)) {
    if (!group.prefix.empty()) {
      keys.push_back(group.prefix);
      continue;
    }
    for (const auto& spec : group.specs) keys.push_back(spec.key);
  }
  return keys;
}

}  // namespace aggsim
