#pragma once
// One explicit name -> factory table per kind. Adding an algorithm: one file defining its
// `*_entry()` function, one declaration and one row in registry.cpp, one test.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "sim/api/aggregator.hpp"
#include "algorithms/compression/compressor.hpp"
#include "sim/core/params.hpp"

namespace aggsim {

// Everything a factory needs, already parsed and checked.
struct AlgorithmConfig {
  ReduceOp op;
  Params params;  // the algorithm's own parameters (its ParamSpecs)
  int world = 1;
  // Makes this rank's compressor (the scenario's `compression`); identity when none.
  std::function<std::unique_ptr<Compressor>()> make_compressor;
  // Which ranks share a node (from the platform); null when built without a platform.
  const RankLayout* layout = nullptr;
  std::uint64_t seed = 0;  // the scenario seed (e.g. for a random graph every rank must agree on)
  std::string compression = "none";  // the scenario's compressor name (for load-time checks)
};

// An extra figure an algorithm reports in summary.json (e.g. a graph's spectral gap); NaN is
// written as null.
struct SummaryField {
  std::string key;
  double value = 0;
};

// Host names the first ranks run on, in rank order (e.g. a parameter server's servers); the other
// ranks take the remaining hosts in natural order. `key` is the parameter they come from.
struct RankPlacement {
  std::string key;
  std::vector<std::string> first_hosts;
};

struct AlgorithmInfo {
  std::string name;
  std::string summary;
  std::vector<ParamSpec> params;
  // True when payloads are combined in flight (reduce-scatter, trees): needs a summable compressor.
  bool reduces_in_flight = true;
  // True when every rank ends with the same result (all-reduce, parameter server); false for
  // decentralized schemes where ranks only approach consensus.
  bool consensus = true;
  std::function<std::unique_ptr<Aggregator>(const AlgorithmConfig&)> make;
  // Optional: checks the parameters as a whole at load time (they passed their specs one by one);
  // throws ParamError naming the offending key.
  std::function<void(const AlgorithmConfig&)> check = {};
  // Optional: extra fields for summary.json.
  std::function<std::vector<SummaryField>(const AlgorithmConfig&)> summary_fields = {};
  // Optional: pins ranks to named hosts (the default maps rank i to the i-th host in natural order).
  std::function<RankPlacement(const Params&)> placement = {};
};

struct CompressorInfo {
  std::string name;
  std::string summary;
  std::vector<ParamSpec> params;
  std::function<std::unique_ptr<Compressor>(const Params&)> make;
  // How the compressor rides a reducing collective (reduces_in_flight). Empty: the generic reduction
  // of summable payloads (compressed_reduction.hpp). PowerSGD sets its own P/Q aggregation here.
  std::function<std::unique_ptr<Aggregator>(std::unique_ptr<Aggregator> collective, const AlgorithmConfig&,
                                            const Params& compressor_params)>
      on_reducing_collective = nullptr;
};

const std::vector<AlgorithmInfo>& algorithm_table();
const std::vector<CompressorInfo>& compressor_table();
const AlgorithmInfo* find_algorithm(std::string_view name);
const CompressorInfo* find_compressor(std::string_view name);

// One rank's aggregator for a scenario: the algorithm itself, or, for a reducing collective with a
// compressor other than `none`, the collective wrapped so it reduces the compressed representation
// (CompressorInfo::on_reducing_collective). Non-reducing algorithms (all-gather, parameter server)
// compress themselves through config.make_compressor.
std::unique_ptr<Aggregator> make_aggregator(const AlgorithmInfo& algorithm, const AlgorithmConfig& config,
                                            const CompressorInfo& compressor, const Params& compressor_params);

}  // namespace aggsim
