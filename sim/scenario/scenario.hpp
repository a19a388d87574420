#pragma once
// A scenario as plain, fully checked structs. Only sim/scenario knows YAML; everything downstream
// reads these.
#include <cstdint>
#include <string>

#include "algorithms/reduce_op.hpp"
#include "sim/core/params.hpp"

namespace aggsim {

enum class NetworkPreset { lv08, alpha_beta, ns3 };

struct PlatformSpec {
  std::string file;      // SimGrid platform XML (as found on disk); empty when generated
  std::string topology;  // generator name (cluster, fat_tree, torus, dragonfly); empty for a file
  Params params;         // the generator's parameters
};

struct ModelSpec {
  std::uint64_t size_bytes = 100'000'000;  // modeled dense fp32 gradient
  std::int64_t proxy_dim = 4096;           // real numbers per rank (math plane)
  bool math = true;
  std::uint64_t wire_elements() const { return (size_bytes + 3) / 4; }
};

struct AlgorithmSpec {
  std::string name = "ring_allreduce";
  ReduceOp op;
  Params params;
};

struct CompressionSpec {
  std::string name = "none";
  Params params;
};

struct OutputSpec {
  std::string dir;     // empty: out/<scenario name>
  bool trace = false;  // also write trace.json (Chrome trace events) and links.csv
};

struct Scenario {
  std::string name;         // from `name:` or the file's stem
  std::string source_file;  // where it was read from (for messages)
  std::uint64_t seed = 1;
  int ranks = 16;
  int steps = 3;
  PlatformSpec platform;
  NetworkPreset network = NetworkPreset::lv08;
  ModelSpec model;
  AlgorithmSpec algorithm;
  CompressionSpec compression;
  OutputSpec output;
};

const char* network_preset_name(NetworkPreset preset);

}  // namespace aggsim
