#pragma once
// A scenario as plain, fully checked and resolved structs: the loader looks every name up once
// (algorithm, compressor, the transport between them, the topology) and everything downstream
// uses the entries. Only sim/scenario knows YAML.
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sim/api/reduce_op.hpp"
#include "sim/core/params.hpp"
#include "sim/platform/platform_spec.hpp"
#include "sim/scenario/calibration.hpp"
#include "sim/workload/options.hpp"

namespace aggsim {

struct AlgorithmInfo;   // algorithms/registry.hpp
struct CompressorInfo;  // algorithms/registry.hpp
struct TransportInfo;   // algorithms/registry.hpp
struct PreparedAtLoad;  // algorithms/registry.hpp

// `auto` models each link class as what it is: links inside a node (NVLink, PCIe) as latency +
// size / bandwidth, links between nodes by the platform's fabric (ethernet: SimGrid's LV08, a
// calibration of TCP; infiniband and roce: latency + size / bandwidth). See effective_network().
enum class NetworkPreset { lv08, alpha_beta, ns3, auto_by_fabric };

struct ModelSpec {
  std::uint64_t size_bytes = 100'000'000;  // modeled dense fp32 gradient
  std::int64_t proxy_dim = 4096;           // real numbers per rank (math plane)
  bool math = true;
  std::string layers_file;        // layer table; empty: one flat layer of size_bytes
  std::string network_name;       // the table's `name`
  std::vector<LayerSpec> layers;  // forward order
  std::int64_t batch = 32;        // modeled samples per rank per step (FLOPs are per sample)
  std::uint64_t wire_elements() const { return (size_bytes + 3) / 4; }
};

// mlbench-core's choices: aggregate gradients or model weights, one flat collective for the whole
// model or by layer: one per DDP-style bucket of layers overlapping the backward pass (overlap:
// true), or mlbench's one blocking aggregation per tensor after the backward pass (overlap: false).
enum class Granularity { layer, model };
enum class ApplyTo { gradients, weights };

struct AlgorithmSpec {
  std::string name;                      // algorithm.name (required)
  const AlgorithmInfo* entry = nullptr;  // the table entry of `name`
  ReduceOp op;
  Params params;
  Granularity granularity = Granularity::model;
  std::uint64_t bucket_bytes = 25'000'000;  // overlap true only
  bool overlap = true;                      // granularity layer only
  ApplyTo apply_to = ApplyTo::gradients;    // default: gradients for consensus algorithms, else weights
  int every = 1;  // aggregate on steps every-1, 2 every-1, ...; the others train locally (local SGD)
};

// Training on the math plane; absent: synthetic gradients, aggregation only.
struct WorkloadSpec {
  bool enabled = false;
  WorkloadOptions options;  // decoded once by the loader
  Params as_written;        // the same keys (workload_param_specs()), for resolved.yaml only
};

// compute.reduce_speed: how fast a rank reduces received data into its own. `host` (the default)
// assumes one flop per fp32 element reduced, i.e. 4 bytes per flop of the host's speed; 0 makes
// reductions free.
struct ReduceSpeed {
  bool from_host = true;
  double bytes_per_s = 0;  // when not from_host; 0: free

  // Work charged per byte reduced on a host of `host_flops` flop/s.
  double flops_per_byte(double host_flops) const {
    if (from_host) return 1.0 / 4;
    return bytes_per_s > 0 ? host_flops / bytes_per_s : 0.0;
  }
};

struct ComputeSpec {
  SpeedFactors speed;
  StragglerOptions straggler;   // decoded once by the loader
  Params straggler_as_written;  // the same keys (straggler_param_specs()), for resolved.yaml only
  ReduceSpeed reduce_speed;
};

struct CompressionSpec {
  std::string name = "none";
  const CompressorInfo* entry = nullptr;     // the table entry of `name`
  const TransportInfo* transport = nullptr;  // what carries its payloads on the algorithm
  Params params;
};

// How the simulation runs; no setting here changes what it computes beyond the bound documented
// in sim/engine/README.md, "Replay of repeated steps".
struct EngineSpec {
  bool replay = true;  // reuse the timing of repeated steps (sim/engine/replay.hpp)
};

// Megatron-LM's layout of the ranks (tensor fastest, then data, then pipeline): the ranks sharing a
// tensor and pipeline position form one data-parallel group, which aggregates its 1/tensor part of
// the model with the scenario's algorithm; all groups aggregate at once on the one platform.
struct ParallelSpec {
  int tensor = 1;
  int pipeline = 1;
  int groups() const { return tensor * pipeline; }
};

struct OutputSpec {
  std::string dir;     // empty: out/<scenario name>
  bool trace = false;  // also write trace.json (Chrome trace events) and links.csv
};

// A key of the scenario file dropped because an override (--set, a swept value) chose another
// algorithm or compressor, which does not take it (scenarios/README.md, "Changing a choice").
struct DroppedKey {
  std::string key;       // "compression.rank"
  std::string location;  // where the file gives it: "file:line:col"
  std::string choice;    // the override that changed the choice: "compression.name=none"
  std::string kind;      // "compressor" or "algorithm"
  std::string new_name;  // "none"
  std::string reason;    // why, when not "<kind> <new_name> does not take it"
};

struct Scenario {
  std::string name;         // from `name:` or the file's stem
  std::string source_file;  // where it was read from (for messages)
  // "file:line:col" of keys that are checked again once the platform is built (ranks, algorithm
  // parameters), so that those errors point at the key too.
  std::map<std::string, std::string> key_locations;
  // Where `key` was written, for a message: its "file:line:col"; for a key left to its default, the
  // place of the section it belongs to (algorithm.name for the algorithm's keys), else the file's
  // first line.
  std::string where(const std::string& key) const {
    for (std::string k = key;;) {
      if (const auto it = key_locations.find(k); it != key_locations.end()) return it->second;
      const auto dot = k.find_last_of('.');
      if (dot == std::string::npos) break;
      k.erase(dot);
    }
    if (key.rfind("algorithm.", 0) == 0)
      if (const auto it = key_locations.find("algorithm.name"); it != key_locations.end()) return it->second;
    return source_file + ":1:1";
  }
  std::uint64_t seed = 1;
  int ranks = 16;
  int steps = 3;
  PlatformSpec platform;
  NetworkPreset network = NetworkPreset::auto_by_fabric;
  ModelSpec model;
  AlgorithmSpec algorithm;
  CompressionSpec compression;
  WorkloadSpec workload;
  ComputeSpec compute;
  EngineSpec engine;
  ParallelSpec parallel;
  OutputSpec output;
  std::optional<Calibration> calibration;  // `calibration: cal.yaml` (already applied to platform/network)
  std::vector<DroppedKey> dropped_keys;    // for the command to report, one line each
  // The algorithm's prepare stage as the loader ran it, for the first run to take when it does not
  // depend on the platform (copies of the scenario share it; a run checks it fits its own config).
  std::shared_ptr<PreparedAtLoad> prepared_at_load;
};

const char* network_preset_name(NetworkPreset preset);
// The preset of that name (auto, lv08, alpha_beta, ns3); nullopt for another name.
std::optional<NetworkPreset> find_network_preset(const std::string& name);
// The SimGrid model a scenario runs under: its preset, with `auto` resolved by the platform's
// fabric (ethernet: lv08, else alpha_beta; links inside a node then keep their own values, see
// sim/engine/network_factors.hpp).
NetworkPreset effective_network(const Scenario& sc);
const char* granularity_name(Granularity g);
const char* apply_to_name(ApplyTo a);

}  // namespace aggsim
